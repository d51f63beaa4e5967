// JPEG XL outputs, read back by an independent libjxl (PyPI's imagecodecs), and the format table they came through.
import Foundation
import ImagePipe
import ImagePipeTestSupport
import ImagePipeVips
import ImagePipeVipsTestSupport
import Testing

@Suite struct JPEGXLTests {
    /// Decodes each pair (a JPEG XL output, the PNG of the same variant) with imagecodecs and prints
    /// the JPEG XL's height, width and channels, and the mean and largest absolute difference of
    /// their pixels (none when their shapes differ: -1).
    static let compare = """
        import sys, imagecodecs, numpy
        args = sys.argv[1:]
        for jxl, png in zip(args[::2], args[1::2]):
            a = imagecodecs.jpegxl_decode(open(jxl, 'rb').read())
            b = imagecodecs.png_decode(open(png, 'rb').read())
            a3 = a if a.ndim == 3 else a[:, :, None]
            b3 = b if b.ndim == 3 else b[:, :, None]
            same = a3.shape == b3.shape
            delta = numpy.abs(a3.astype(float) - b3.astype(float)) if same else None
            if same and a3.shape[2] == 4:
                # Colour under a transparent pixel is no colour: compared where the PNG is opaque, alpha everywhere.
                opaque = b3[:, :, 3] == 255
                delta = numpy.concatenate([delta[:, :, :3][opaque].ravel(), delta[:, :, 3].ravel()])
            diff = float(delta.mean()) if same else -1
            peak = float(delta.max()) if same else -1
            print(a3.shape[0], a3.shape[1], a3.shape[2], diff, peak)
        """

    struct Decoded {
        var height: Int
        var width: Int
        var channels: Int
        var meanDifference: Double
        var peakDifference: Double
    }

    /// Each source's `spec` as JPEG XL and as PNG, compared by imagecodecs.
    func decodedBeside(png pngSpec: String, jxl jxlSpec: String, sources: [String]) throws -> [(source: String, made: EncodedVariant, Decoded)] {
        let directory = TemporaryDirectory()
        var paths: [String] = []
        var made: [EncodedVariant] = []
        for (index, source) in sources.enumerated() {
            let result = try Fixtures.encoder.compress(
                SourceImage(name: source, content: .bytes(Fixtures.data(source))),
                variants: [Fixtures.variant("x=" + jxlSpec), Fixtures.variant("p=" + pngSpec)], limits: .default)
            made.append(result.output("x"))
            paths.append(directory.write("\(index).jxl", result.output("x").data))
            paths.append(directory.write("\(index).png", result.output("p").data))
        }
        let lines = try PythonOracle.run(Self.compare, paths).split(separator: "\n")
        #expect(lines.count == sources.count)
        return zip(sources, zip(made, lines)).map { source, pair in
            let fields = pair.1.split(separator: " ")
            return (
                source, pair.0,
                Decoded(
                    height: Int(fields[0])!, width: Int(fields[1])!, channels: Int(fields[2])!, meanDifference: Double(fields[3])!,
                    peakDifference: Double(fields[4])!)
            )
        }
    }

    @Test func libjxlReadsEveryOutputAtItsSizeWithItsColoursAndAlpha() throws {
        let sources = [
            "images/formats/landscape.jpg", "images/formats/alpha.png", "images/formats/display-p3.jpg", "images/formats/cmyk.jpg",
            "images/exif-orientation/Landscape_6.jpg", "images/formats/grey.jpg",
        ]
        for (source, made, decoded) in try decodedBeside(png: "400x400,png", jxl: "400x400,jxl,q85", sources: sources) {
            #expect(made.data.starts(with: [0xFF, 0x0A]), "\(source): a JPEG XL codestream")
            #expect(decoded.width == made.size.width && decoded.height == made.size.height, "\(source): \(decoded) vs \(made.size)")
            if source.hasSuffix("landscape.jpg") { #expect(decoded.width == 400, "\(source): fitted to the box") }
            // The same pixels as the lossless PNG of that variant (upright, sRGB), within q85's loss.
            #expect(decoded.meanDifference >= 0 && decoded.meanDifference < 4, "\(source): mean difference \(decoded.meanDifference) \(decoded)")
            // sRGB like every variant (a grey source too), with its alpha when it has one.
            let expectedChannels = source.hasSuffix("alpha.png") ? 4 : 3
            #expect(decoded.channels == expectedChannels, "\(source): \(decoded.channels) channels")
        }
    }

    @Test func losslessGivesThePNGsPixelsExactly() throws {
        let sources = ["images/formats/landscape.jpg", "images/formats/alpha.png"]
        for (source, made, decoded) in try decodedBeside(png: "300x300,png", jxl: "300x300,jxl,lossless", sources: sources) {
            #expect(made.quality == nil, "\(source): a lossless output has no quality")
            #expect(decoded.peakDifference == 0, "\(source): lossless differs by up to \(decoded.peakDifference)")
        }
    }

    @Test func autoChoosesAQualityThatMeetsItsTarget() throws {
        let result = try Fixtures.compress("images/formats/landscape.jpg", [Fixtures.variant("a=800x800,jxl,auto")])
        let output = result.variants[0]
        let quality = try #require(output.quality)
        let score = try #require(output.score)
        #expect((10...95).contains(quality))
        #expect(score >= VariantSpec.defaultAutoTarget - 1, "score \(score) at q\(quality)")
        // The score is the reference one of what libjxl decodes.
        let reference = try Fixtures.compress("images/formats/landscape.jpg", [Fixtures.variant("r=800x800,png")]).variants[0].data
        #expect(abs(try VipsProbe.ssimulacra2(reference: reference, decodingFirst: output.data) - score) < 0.5)
    }

    @Test func effortChangesTheEncodingAndIsBoundedByTheTable() throws {
        let fast = try Fixtures.compress("images/formats/landscape.jpg", [Fixtures.variant("e=800x800,jxl,q75,effort=1")]).variants[0].data
        let usual = try Fixtures.compress("images/formats/landscape.jpg", [Fixtures.variant("e=800x800,jxl,q75")]).variants[0].data
        #expect(fast != usual)
        #expect(EncoderOptions.defaultEffort(for: .jxl) == 5)
        for bad in ["e=800x,jxl,q75,effort=0", "e=800x,jxl,q75,effort=10", "e=800x,jxl,q75,444", "e=800x,jxl,q75,progressive"] {
            #expect(throws: ImagePipeError.self, "\(bad)") { try VariantSpec(parsing: bad) }
        }
        #expect(try VariantSpec(parsing: "e=800x,jpegxl,q75,effort=9").specString == "e=800x,jxl,q75,effort=9")
    }

    @Test func outputsHoldNoMetadataAndAPolicyThatWouldKeepSomeIsRefusedOrLeftOut() throws {
        // A spec asking a JPEG XL variant to keep metadata is refused, naming why.
        do {
            _ = try VariantSpec(parsing: "m=800x,jxl,q75,metadata=keep")
            Issue.record("metadata=keep was taken for jxl")
        } catch {
            #expect(error.reason.contains("jxl outputs hold no metadata"), "\(error.reason)")
        }
        // A command-wide policy leaves JPEG XL out, and the other formats keep it.
        let jxl = Fixtures.variant("m=800x,jxl,q75").applying(metadata: .keep)
        let jpeg = Fixtures.variant("j=800x,jpeg,q75").applying(metadata: .keep)
        #expect(jxl.metadata == .strip && jpeg.metadata == .keep)
        let source = "images/exif-orientation/Landscape_6.jpg"
        let result = try Fixtures.compress(source, [jxl, jpeg])
        let directory = TemporaryDirectory()
        let path = directory.write("m.jxl", result.output("m").data)
        let tags = try CommandRunner.run(executable: "/usr/bin/env", ["exiftool", "-s", "-G1", "-EXIF:all", "-XMP:all", path])
        #expect(tags.status == 0 && tags.stdout.isEmpty, "exiftool found: \(tags.stdout)")
        #expect(try VipsProbe.header(result.output("j").data, "exif-ifd0-Orientation") != nil)
    }

    @Test func theHelpAndTheDocsListEveryFormatInTheTable() throws {
        let help = OutputFormat.variantHelp
        let readme = try String(contentsOfFile: Fixtures.repository + "/README.md", encoding: .utf8)
        let usage = try String(contentsOfFile: Fixtures.repository + "/docs/usage.md", encoding: .utf8)
        let optionRows = usage.split(separator: "\n").filter { $0.hasPrefix("| ") }
        for format in OutputFormat.allCases {
            let traits = format.traits
            #expect(help.contains(format.rawValue), "--help lacks \(format)")
            #expect(readme.contains(traits.displayName), "README lacks \(traits.displayName)")
            #expect(usage.contains("`\(format.rawValue)`"), "docs/usage.md's FORMAT list lacks `\(format.rawValue)`")
            // The encoder options table: a row per format, naming every option the table gives it.
            let row = optionRows.first { $0.hasPrefix("| \(traits.displayName) |") }
            #expect(row != nil, "docs/usage.md's encoder options table has no row for \(traits.displayName)")
            for option in traits.options {
                let written = option == .effort ? "effort=\(traits.effort!.lowerBound)` to `effort=\(traits.effort!.upperBound)" : option.rawValue
                #expect(row?.contains(written) == true, "\(traits.displayName)'s row lacks \(written)")
            }
        }
    }

    @Test func everyFormatHasItsOwnNamesExtensionAndEncoder() {
        let formats = OutputFormat.allCases
        #expect(Set(formats.flatMap(\.traits.names)).count == formats.flatMap(\.traits.names).count)
        #expect(Set(formats.map(\.traits.encoder)).count == formats.count)
        #expect(Set(formats.map(\.traits.srcsetRank)).count == formats.count)
        for format in formats {
            #expect(format.traits.names.first == format.rawValue)
            #expect(OutputFormat(name: format.rawValue.uppercased()) == format)
            #expect((format.traits.effort == nil) == !format.traits.options.contains(.effort))
            if let effort = format.traits.effort, let chosen = format.traits.defaultEffort { #expect(effort.contains(chosen)) }
        }
        #expect(OutputFormat.srcsetOrder.first == .jxl && OutputFormat.srcsetOrder.last == .gif)
    }
}
