import Foundation
import ImagePipe
import ImagePipeTestSupport
import ImagePipeVips
import ImagePipeVipsTesting
import Testing

@Suite struct AutoQualityTests {
    @Test func autoPicksTheLowestQualityThatMeetsTheTargetAndRecordsIt() throws {
        let source = "images/exif-orientation/Landscape_1.jpg"
        let auto = try Fixtures.compress(source, [Fixtures.variant("m=800x800,webp,auto:65")]).variants[0]
        let quality = try #require(auto.quality)
        let score = try #require(auto.score)
        #expect(score >= 65 && auto.encodes >= 1 && auto.encodes <= 6, "q\(quality) scored \(score) in \(auto.encodes) encodes")
        // The recorded score is the output's own (533 rows: scored on every pixel, not sampled), its
        // full score meets the target, and a few steps lower would miss it.
        let reference = try Fixtures.compress(source, [Fixtures.variant("m=800x800,png")]).variants[0].data
        let full = try VipsProbe.ssimulacra2(reference: reference, distorted: auto.data)
        #expect(abs(full - score) <= VipsProbe.sampledScoreError && full >= 65)
        let lower = try Fixtures.compress(source, [Fixtures.variant("m=800x800,webp,q\(max(1, quality - 3))")]).variants[0]
        #expect(try VipsProbe.ssimulacra2(reference: reference, distorted: lower.data) < 65 + 1)
        // A higher target costs more bytes.
        let higher = try Fixtures.compress(source, [Fixtures.variant("m=800x800,webp,auto:80")]).variants[0]
        let higherQuality = try #require(higher.quality)
        #expect(try #require(higher.score) >= 80 && higher.data.count > auto.data.count && higherQuality > quality)
    }

    @Test func everyVariantOfTheWebAutoPresetMeetsItsTarget() throws {
        let result = try Fixtures.compress("images/formats/landscape.jpg", Preset.webAuto)
        for output in result.variants {
            let target = try #require(output.spec.autoTarget)
            #expect(try #require(output.score) >= target, "\(output.spec.name)")
            #expect(try VipsProbe.info(output.data).width == output.size.width)
        }
    }

    @Test func imagesWithAlphaAreScoredAndKeepTheirAlpha() throws {
        let output = try Fixtures.compress("images/formats/alpha.png", [Fixtures.variant("a=200x200,webp,auto:70")]).variants[0]
        let score = try #require(output.score)
        // Sharp synthetic edges may not reach the target at all: then the highest quality is used.
        #expect(score >= 70 || output.quality == 95, "q\(output.quality ?? 0) scored \(score)")
        #expect(try VipsProbe.info(output.data).bands == 4)
    }

    /// The in-process SSIMULACRA 2 against the reference package on real photos at several qualities.
    @Test func scoresAgreeWithTheReferenceImplementationWithinTwoPoints() throws {
        let directory = TemporaryDirectory()
        var pairs: [(String, String, Double)] = []
        for (index, source) in ["images/formats/landscape.jpg", "images/exif-orientation/Landscape_6.jpg", "images/formats/small-400x300.jpg"]
            .enumerated()
        {
            let reference = try Fixtures.compress(source, [Fixtures.variant("r=640x640,png")]).variants[0].data
            let referencePath = directory.write("\(index).png", reference)
            for spec in ["jpeg,q30", "jpeg,q85", "webp,q50", "avif,q40"] {
                let encoded = try Fixtures.compress(source, [Fixtures.variant("r=640x640,\(spec)")]).variants[0]
                let path = directory.write("\(index)-\(spec).\(encoded.spec.format.fileExtension)", encoded.data)
                pairs.append((referencePath, path, try VipsProbe.ssimulacra2(reference: reference, distorted: encoded.data)))
            }
        }
        // The package reads AVIF through Pillow only with a plugin, so every output goes to it as PNG.
        for (_, path, _) in pairs {
            let png = try Fixtures.compress(bytes: Data(contentsOf: URL(fileURLWithPath: path)), [Fixtures.variant("p=10000x10000,png")])
            directory.write((path as NSString).lastPathComponent + ".png", png.variants[0].data)
        }
        let script = """
            import sys
            from ssimulacra2 import compute_ssimulacra2
            args = sys.argv[1:]
            for reference, distorted in zip(args[::2], args[1::2]):
                print(compute_ssimulacra2(reference, distorted + ".png"))
            """
        let printed = try PythonOracle.run(script, pairs.flatMap { [$0.0, $0.1] })
        let expected = printed.split(separator: "\n").compactMap { Double($0) }
        #expect(expected.count == pairs.count)
        for ((_, path, ours), theirs) in zip(pairs, expected) {
            #expect(abs(ours - theirs) <= 2, "\((path as NSString).lastPathComponent): ours \(ours), reference \(theirs)")
        }
    }
}

@Suite struct EncoderOptionTests {
    @Test func jpegIsProgressiveByDefaultAndBaselineOnRequest() throws {
        let source = "images/formats/landscape.jpg"
        let progressive = try Fixtures.compress(source, [Fixtures.variant("j=600x600,jpeg,q80")]).variants[0].data
        let baseline = try Fixtures.compress(source, [Fixtures.variant("j=600x600,jpeg,q80,baseline")]).variants[0].data
        #expect(try VipsProbe.header(progressive, "jpeg-multiscan") == "1")
        #expect(try VipsProbe.header(baseline, "jpeg-multiscan") == "0")
    }

    @Test func smallJPEGsAreBaselineByDefaultWhereProgressiveCostsBytes() throws {
        let source = "images/formats/landscape.jpg"
        let small = try Fixtures.compress(source, [Fixtures.variant("j=150x150,jpeg,q80")]).variants[0]
        #expect(max(small.size.width, small.size.height) < EncoderOptions.progressiveFromSide)
        #expect(try VipsProbe.header(small.data, "jpeg-multiscan") == "0")
        let forced = try Fixtures.compress(source, [Fixtures.variant("j=150x150,jpeg,q80,progressive")]).variants[0].data
        #expect(try VipsProbe.header(forced, "jpeg-multiscan") == "1")
        #expect(forced.count > small.data.count, "progressive \(forced.count) bytes, baseline \(small.data.count)")
    }

    @Test func fullChromaKeepsJPEGChromaAtFullResolution() throws {
        let source = "images/formats/landscape.jpg"
        let subsampled = try Fixtures.compress(source, [Fixtures.variant("j=600x600,jpeg,q80")]).variants[0].data
        let full = try Fixtures.compress(source, [Fixtures.variant("j=600x600,jpeg,q80,444")]).variants[0].data
        #expect(try VipsProbe.header(subsampled, "jpeg-chroma-subsample") == "4:2:0")
        #expect(try VipsProbe.header(full, "jpeg-chroma-subsample") == "4:4:4")
        #expect(full.count > subsampled.count)
    }

    @Test func losslessWebPKeepsEveryPixel() throws {
        let result = try Fixtures.compress(
            "images/formats/small-200x150.jpg",
            [
                Fixtures.variant("l=200x200,webp,lossless"),
                Fixtures.variant("p=200x200,png"),
            ])
        let lossless = try VipsProbe.decode(result.output("l").data)
        #expect(lossless.meanAbsoluteDifference(to: try VipsProbe.decode(result.output("p").data)) == 0)
        #expect(result.output("l").quality == nil)
    }

    @Test func effortAndSmartSubsamplingChangeTheEncodingOnly() throws {
        let source = "images/formats/landscape.jpg"
        let variants = [
            "a=400x400,webp,q75,effort=0", "b=400x400,webp,q75,effort=6", "c=400x400,webp,q75,smart_subsample",
            "d=300x300,avif,q50,effort=0", "e=300x300,avif,q50,effort=5", "f=300x300,avif,q50,444",
        ].map(Fixtures.variant)
        let result = try Fixtures.compress(source, variants)
        #expect(Set(result.variants.map(\.data)).count == variants.count, "every option gives different bytes")
        for output in result.variants {
            #expect(try VipsProbe.info(output.data).width == output.size.width)
        }
    }
}
