// Scores estimated from sampled rows, as `auto` searches with them, against full scores on fixtures.
import Foundation
import ImagePipe
import ImagePipeTestSupport
import ImagePipeVips
import ImagePipeVipsTestSupport
import Testing

@Suite struct SampledScoreTests {
    /// A fixture resized losslessly, the reference its encodes are scored against.
    private func reference(_ source: String, box: Int) throws -> Data {
        try Fixtures.compress(source, [Fixtures.variant("r=\(box)x\(box),png")]).variants[0].data
    }

    @Test(arguments: ["jpeg,q40", "jpeg,q65", "jpeg,q85", "webp,q45", "webp,q70"])
    func sampledScoresStayWithinTheDocumentedErrorOfFullScores(_ spec: String) throws {
        for (source, box) in [("images/exif-orientation/Landscape_1.jpg", 1800), ("images/exif-orientation/Landscape_6.jpg", 1800)] {
            let reference = try reference(source, box: box)
            let encoded = try Fixtures.encoder.compress(
                SourceImage(name: source, content: .bytes(Fixtures.data(source))), variants: [Fixtures.variant("e=\(box)x\(box),\(spec)")],
                limits: .default
            ).variants[0].data
            let full = try VipsProbe.ssimulacra2(reference: reference, distorted: encoded)
            let sampled = try VipsProbe.sampledSSIMULACRA2(reference: reference, distorted: encoded)
            #expect(sampled.sampled, "\(source) has 1024 rows or more, so its fine scales are sampled")
            // Above the full score by at most the error `auto` adds to its aim; below it by a point at most
            // (that side only costs bytes).
            #expect(
                sampled.score - full <= VipsProbe.sampledScoreError && full - sampled.score <= 1,
                "\(source) \(spec): sampled \(sampled.score), full \(full)")
            // Sampling must leave something out, or the test would pass with sampling broken off.
            #expect(sampled.score != full)
        }
    }

    @Test func imagesUnder1024RowsAreScoredOnEveryPixel() throws {
        for (source, box) in [("images/formats/small-400x300.jpg", 400), ("images/exif-orientation/Landscape_1.jpg", 1500)] {
            let reference = try reference(source, box: box)
            let encoded = try Fixtures.compress(source, [Fixtures.variant("e=\(box)x\(box),jpeg,q50")]).variants[0].data
            let sampled = try VipsProbe.sampledSSIMULACRA2(reference: reference, distorted: encoded)
            #expect(!sampled.sampled)
            #expect(sampled.score == (try VipsProbe.ssimulacra2(reference: reference, distorted: encoded)))
        }
    }

    /// A tall, narrow image (150x2400): many rows, but too narrow for six scales, where sampling's
    /// error was never measured (sampled, it scored 0.8 points over its full score): scored whole.
    @Test func narrowImagesAreScoredOnEveryPixelHoweverTall() throws {
        let reference = try reference("images/formats/tall.jpg", box: 2400)
        let encoded = try Fixtures.compress("images/formats/tall.jpg", [Fixtures.variant("e=2400x2400,jpeg,q55")]).variants[0].data
        let sampled = try VipsProbe.sampledSSIMULACRA2(reference: reference, distorted: encoded)
        #expect(!sampled.sampled)
        #expect(sampled.score == (try VipsProbe.ssimulacra2(reference: reference, distorted: encoded)))
    }

    /// `auto` searches on sampled scores aiming above the target by the error, so the output's full
    /// score, measured independently, still reaches the target.
    @Test(arguments: ["jpeg,auto:70", "webp,auto:62"])
    func theChosenQualitysFullScoreMeetsTheTarget(_ spec: String) throws {
        let source = "images/exif-orientation/Landscape_1.jpg"
        let output = try Fixtures.compress(source, [Fixtures.variant("m=1800x1800,\(spec)")]).variants[0]
        let target = try #require(output.spec.autoTarget)
        let full = try VipsProbe.ssimulacra2(reference: try reference(source, box: 1800), distorted: output.data)
        #expect(full >= target, "q\(output.encoding.quality ?? 0): full score \(full)")
        // The recorded score is the estimate the search stopped on, within the error of the full one.
        let recorded = try #require(output.encoding.score)
        #expect(recorded - full <= VipsProbe.sampledScoreError && full - recorded <= 1)
    }

    @Test func withScoreTheRecordedAutoScoreIsTheFullScore() throws {
        var configuration = VipsCompressor.Configuration()
        configuration.scoreEveryVariant = true
        let compressor = try VipsCompressor(configuration: configuration)
        let source = "images/exif-orientation/Landscape_1.jpg"
        let output = try compressor.compress(
            SourceImage(name: source, content: .bytes(Fixtures.data(source))),
            variants: [Fixtures.variant("m=1800x1800,jpeg,auto:70")], limits: .default
        ).variants[0]
        let full = try VipsProbe.ssimulacra2(reference: try reference(source, box: 1800), distorted: output.data)
        #expect(abs(try #require(output.encoding.score) - full) < 0.01)
    }
}

/// Images under 256 pixels on a side have fewer than SSIMULACRA 2's six scales. Each norm keeps the
/// weight of its own channel and scale: counting through the weights instead gave a 64x1024 strip
/// at JPEG quality 80 a score of 9.8, where every other fixture scored 50 and up.
@Suite struct NarrowImageScoreTests {
    @Test(arguments: ["jpeg,q80", "webp,q80"])
    func aNarrowStripScoresAsItsTilingWideEnoughForSixScales(_ spec: String) throws {
        let directory = TemporaryDirectory(prefix: "imagepipe-narrow-score")
        // The strip (64x1024, four scales) and its encode, decoded to PNG.
        let strip = try Fixtures.compress("images/formats/tall.jpg", [Fixtures.variant("r=1024x1024,png")]).variants[0].data
        let encoded = try Fixtures.encoder.compress(
            SourceImage(name: "strip", content: .bytes(strip)), variants: [Fixtures.variant("e=1024x1024,\(spec)")], limits: .default
        ).variants[0].data
        let stripScore = try VipsProbe.ssimulacra2(reference: strip, distorted: encoded)
        // Four strips side by side (256x1024, six scales): the same pixels at the fine scales, so
        // the fine scales' errors are the same, weighted the same; the two coarse scales add theirs.
        let decoded = try Fixtures.compress(bytes: encoded, [Fixtures.variant("d=1024x1024,png")]).variants[0].data
        try strip.write(to: URL(fileURLWithPath: directory.url("r.png")))
        try decoded.write(to: URL(fileURLWithPath: directory.url("d.png")))
        for name in ["r", "d"] {
            let tile = directory.url("\(name).png")
            let joined = try CommandRunner.run(
                executable: "/usr/bin/env",
                ["vips", "arrayjoin", [tile, tile, tile, tile].joined(separator: " "), directory.url("\(name)4.png"), "--across", "4"])
            #expect(joined.status == 0, "\(joined.stderr)")
        }
        let tiledScore = try VipsProbe.ssimulacra2(
            reference: Data(contentsOf: URL(fileURLWithPath: directory.url("r4.png"))),
            distorted: Data(contentsOf: URL(fileURLWithPath: directory.url("d4.png"))))
        #expect(stripScore >= tiledScore - 0.01 && stripScore - tiledScore < 5, "strip \(stripScore), tiled \(tiledScore)")
        #expect(stripScore > 60, "\(stripScore)")
    }
}
