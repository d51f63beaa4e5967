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
            // One variant a call, each made the way a lone variant is (its decode streamed into its encode).
            func make(_ spec: String) throws -> EncodedVariant {
                try Fixtures.encoder.compress(
                    SourceImage(name: source, content: .bytes(Fixtures.data(source))), variants: [Fixtures.variant("v=" + spec)],
                    limits: .default
                ).variants[0]
            }
            let jxl = try make(jxlSpec)
            made.append(jxl)
            paths.append(directory.write("\(index).jxl", jxl.data))
            paths.append(directory.write("\(index).png", try make(pngSpec).data))
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
            #expect(
                decoded.width == made.encoding.size.width && decoded.height == made.encoding.size.height,
                "\(source): \(decoded) vs \(made.encoding.size)")
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
            #expect(made.encoding.quality == nil, "\(source): a lossless output has no quality")
            #expect(decoded.peakDifference == 0, "\(source): lossless differs by up to \(decoded.peakDifference)")
        }
    }

    @Test func autoChoosesAQualityThatMeetsItsTarget() throws {
        let result = try Fixtures.compress("images/formats/landscape.jpg", [Fixtures.variant("a=800x800,jxl,auto")])
        let output = result.variants[0]
        let quality = try #require(output.encoding.quality)
        let score = try #require(output.encoding.score)
        #expect((10...95).contains(quality))
        #expect(score >= VariantSpec.defaultAutoTarget - 1, "score \(score) at q\(quality)")
        // The score is the reference one of what libjxl decodes.
        let reference = try Fixtures.compress("images/formats/landscape.jpg", [Fixtures.variant("r=800x800,png")]).variants[0].data
        #expect(abs(try VipsProbe.ssimulacra2(reference: reference, decodingFirst: output.data) - score) < 0.5)
    }

    @Test func effortChangesTheEncodingAndIsBoundedByWhatLibvipsTakes() throws {
        func encoded(_ options: String) throws -> Data {
            try Fixtures.compress("images/formats/landscape.jpg", [Fixtures.variant("e=800x800,jxl,q75" + options)]).variants[0].data
        }
        // libvips 8.14 keeps effort 7 for a value it does not take: each of these is its own encoding.
        let efforts = try [",effort=3", "", ",effort=7", ",effort=9"].map(encoded)
        #expect(Set(efforts).count == efforts.count, "efforts 3, 5 (the default), 7 and 9 each encode differently")
        #expect(EncoderOptions.defaultEffort(for: .jxl) == 5)
        for bad in [
            "e=800x,jxl,q75,effort=2", "e=800x,jxl,q75,effort=10", "e=800x,jxl,q75,444", "e=800x,jxl,q75,progressive",
            "e=800x,jxl,q75,lossless", "e=800x,jxl,lossless,auto",
        ] {
            #expect(throws: ImagePipeError.self, "\(bad)") { try VariantSpec(parsing: bad) }
        }
        #expect(try VariantSpec(parsing: "e=800x,jpegxl,q75,effort=9").specString == "e=800x,jxl,q75,effort=9")
        #expect(try VariantSpec(parsing: "e=800x,jxl,lossless").specString == "e=800x,jxl,lossless")
    }

    @Test func aJPEGXLSourceIsRefusedByItsFirstBytesBeforeLibjxlReadsIt() throws {
        let made = try Fixtures.compress("images/formats/landscape.jpg", [Fixtures.variant("x=1200x,jxl,lossless")]).variants[0].data
        let damaged = Data([0xFF, 0x0A]) + Data(repeating: 0xA5, count: 4096)
        let container = Data([0, 0, 0, 0x0C, 0x4A, 0x58, 0x4C, 0x20, 0x0D, 0x0A, 0x87, 0x0A]) + Data(repeating: 0, count: 64)
        for (what, bytes) in [("a JPEG XL", made), ("a damaged codestream", damaged), ("a container", container)] {
            // Damaged bytes would fail `corrupt_image` in libjxl's header parse: refused before it.
            let error = Self.failure { () throws(ImagePipeError) in _ = try Fixtures.compress(bytes: bytes, [Fixtures.variant("j=400x,jpeg,q80")]) }
            #expect(
                error?.code == .unsupportedFormat && error?.reason.contains("JPEG XL sources are not read") == true,
                "\(what): \(String(describing: error))")
        }
        // Kept open (a large file), the same.
        let directory = TemporaryDirectory()
        let path = directory.write("large.jpg", made)
        #expect(made.count > 64 << 10)
        let opened = try #require(OpenedFile(adopting: open(path, O_RDONLY | O_CLOEXEC)))
        let error = Self.failure { () throws(ImagePipeError) in
            _ = try Fixtures.compressor.compress(
                SourceImage(name: "large.jpg", content: .file(opened)), variants: [Fixtures.variant("j=400x,jpeg,q80")], limits: .default)
        }
        #expect(error?.code == .unsupportedFormat, "\(String(describing: error))")
        // A dry run's header read, of a file as of bytes: refused alike.
        for content in [SourceImage.Content.file(opened), .bytes(made)] {
            let predicted = Self.failure { () throws(ImagePipeError) in
                _ = try Fixtures.compressor.readHeader(
                    SourceImage(name: "large.jpg", content: content), variants: [Fixtures.variant("j=400x,jpeg,q80")], limits: .default)
            }
            #expect(predicted?.reason.contains("JPEG XL sources are not read") == true, "\(String(describing: predicted))")
        }
    }

    /// The error `body` failed with; nil when it did not fail.
    static func failure(_ body: () throws(ImagePipeError) -> Void) -> ImagePipeError? {
        do {
            try body()
            return nil
        } catch {
            return error
        }
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

    @Test func theReadmeAndTheDocsListEveryFormatAndOptionInTheTable() throws {
        let readme = try String(contentsOfFile: Fixtures.repository + "/README.md", encoding: .utf8)
        let usage = try String(contentsOfFile: Fixtures.repository + "/docs/usage.md", encoding: .utf8)
        // The README's first paragraph names the formats: "encoded as JPEG, WebP, …, PNG or GIF with".
        let flat = readme.split(whereSeparator: \.isNewline).joined(separator: " ")
        let range = try #require(flat.range(of: #"encoded as [^.]*? with"#, options: .regularExpression))
        let listed = flat[range]
        let names = listed.dropFirst("encoded as ".count).dropLast(" with".count)
            .replacingOccurrences(of: " or ", with: ", ").components(separatedBy: ", ")
        #expect(Set(names) == Set(OutputFormat.allCases.map(\.traits.displayName)), "README lists \(names)")
        let prose = usage.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
        let optionRows = usage.split(separator: "\n").filter { $0.hasPrefix("| ") }
        for format in OutputFormat.allCases {
            let traits = format.traits
            #expect(usage.contains("`\(format.rawValue)`"), "docs/usage.md's FORMAT list lacks `\(format.rawValue)`")
            if let effort = traits.effort, let chosen = traits.defaultEffort {
                let said = "\(traits.displayName) \(effort.lowerBound)–\(effort.upperBound), default \(chosen)"
                #expect(prose.contains(said), "docs/usage.md's effort=N says not \(said)")
            }
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
