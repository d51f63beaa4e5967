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

    /// A tall, narrow image (150x2400): many rows, so sampled, with bands across its whole width. Its
    /// narrow bands stray further below the full score (0.5–0.9 points here) but not above it.
    @Test func tallImagesAreSampledAndStayWithinTheError() throws {
        let reference = try reference("images/formats/tall.jpg", box: 2400)
        let encoded = try Fixtures.compress("images/formats/tall.jpg", [Fixtures.variant("e=2400x2400,jpeg,q55")]).variants[0].data
        let sampled = try VipsProbe.sampledSSIMULACRA2(reference: reference, distorted: encoded)
        let full = try VipsProbe.ssimulacra2(reference: reference, distorted: encoded)
        #expect(sampled.sampled)
        #expect(sampled.score - full <= VipsProbe.sampledScoreError && full - sampled.score <= 1, "sampled \(sampled.score), full \(full)")
    }

    /// `auto` searches on sampled scores aiming above the target by the error, so the output's full
    /// score, measured independently, still reaches the target.
    @Test(arguments: ["jpeg,auto:70", "webp,auto:62"])
    func theChosenQualitysFullScoreMeetsTheTarget(_ spec: String) throws {
        let source = "images/exif-orientation/Landscape_1.jpg"
        let output = try Fixtures.compress(source, [Fixtures.variant("m=1800x1800,\(spec)")]).variants[0]
        let target = try #require(output.spec.autoTarget)
        let full = try VipsProbe.ssimulacra2(reference: try reference(source, box: 1800), distorted: output.data)
        #expect(full >= target, "q\(output.quality ?? 0): full score \(full)")
        // The recorded score is the estimate the search stopped on, within the error of the full one.
        let recorded = try #require(output.score)
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
        #expect(abs(try #require(output.score) - full) < 0.01)
    }
}
