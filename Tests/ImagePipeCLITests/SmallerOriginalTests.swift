// A JPEG variant that would be larger than its JPEG original at the same size is the original's bytes, with real libvips on real photos.
import Foundation
import ImagePipe
import ImagePipeTestSupport
import ImagePipeVipsTestSupport
import Testing

/// The `web` preset's `large` variant (2048 px JPEG) of 1800x1200 camera JPEGs, which encoding at
/// quality 82 made 12–14% larger than the photos themselves; two of them are upright, the others
/// turned by their EXIF orientation.
@Suite(.offThePool) struct SmallerOriginalTests {
    let directory = TemporaryDirectory(prefix: "imagepipe-smaller-original")

    func batch(_ extra: [String], into name: String) throws -> [JobResult] {
        let run = try CommandRunner.run(
            ["batch", Fixtures.root + "/images/exif-orientation", "--dest", directory.url(name), "--manifest", directory.url(name + ".jsonl")]
                + extra)
        #expect(run.status == 0, "\(run.stderr)")
        return try ManifestReader.read(directory.url(name + ".jsonl")).filter { $0.status == .done }
    }

    @Test func noVariantIsLargerThanItsOriginalAtTheSameSizeAndItShowsTheSamePixels() throws {
        let kept = try batch([], into: "kept")
        let encoded = try batch(["--always-encode"], into: "encoded")
        #expect(kept.count == 9)
        let bytesOut = kept.reduce(0) { $0 + $1.outputBytes }, encodedOut = encoded.reduce(0) { $0 + $1.outputBytes }
        #expect(bytesOut < encodedOut)
        for record in kept {
            let large = try #require(record.variants.first { $0.name == "large" })
            let original = Fixtures.data("images/exif-orientation/" + record.source)
            let orientation = try VipsProbe.header(original, "orientation") ?? "1"
            let stored = try Data(contentsOf: URL(fileURLWithPath: directory.url("kept/" + large.key)))
            #expect(large.width == 1800 && large.height == 1200 && stored.count == large.bytes)
            let reEncoded = try #require(encoded.first { $0.source == record.source }?.variants.first { $0.name == "large" })
            guard orientation == "1" else {
                // A turned original is encoded upright: its pixels are what the record says, and no
                // tag is left to turn them again.
                #expect(!large.encoding.keptOriginal && large.encoding.quality != nil, "\(record.source)")
                let info = try VipsProbe.info(stored)
                #expect(info.width == 1800 && info.height == 1200 && info.metadata.isEmpty, "\(record.source): \(info)")
                continue
            }
            #expect(large.bytes <= original.count, "\(record.source): \(large.bytes) B from \(original.count) B")
            #expect(large.encoding.keptOriginal && large.encoding.quality == nil)
            #expect(reEncoded.bytes > large.bytes && !reEncoded.encoding.keptOriginal, "--always-encode encodes it")

            // The same pixels as the original, and no metadata.
            let difference = try VipsProbe.decode(stored).meanAbsoluteDifference(to: try VipsProbe.decode(original))
            #expect(difference == 0, "\(record.source)")
            let info = try VipsProbe.info(stored)
            #expect(info.metadata.isEmpty, "\(record.source): \(info.metadata)")
            for text in ["Exif\0\0II", "http://ns.adobe.com", "Photoshop"] {
                #expect(stored.range(of: Data(text.utf8)) == nil || original.range(of: Data(text.utf8)) == nil, "\(record.source) keeps \(text)")
            }
        }
        #expect(kept.filter { $0.variants.contains { $0.encoding.keptOriginal } }.count == 2, "Landscape_0 and _1, the upright ones")
    }

    @Test func aVariantOfAnotherSizeOrFormatIsEncodedAsBefore() throws {
        let kept = try batch([], into: "kept")
        for record in kept {
            for variant in record.variants where variant.name != "large" {
                #expect(!variant.encoding.keptOriginal && variant.encoding.quality != nil, "\(record.source) \(variant.name)")
            }
        }
    }

    /// The ratios usage.md gives for `make demo`'s images, with and without `--always-encode`, are
    /// the ones a run prints: a figure in the docs comes from here, and a change that moves it fails
    /// until the page says the new one.
    @Test func theDemoRatiosTheUsagePageGivesAreTheRunsOwn() throws {
        let page = try String(contentsOfFile: Fixtures.repository + "/docs/usage.md", encoding: .utf8)
        let stated = try #require(
            page.replacingOccurrences(of: "\n", with: " ").firstMatch(of: /ratio goes from (\d\.\d{3}) with `--always-encode` to (\d\.\d{3})/),
            "usage.md no longer gives the demo's ratios")
        func ratio(_ extra: [String], into name: String) throws -> String {
            let run = try CommandRunner.run(["batch", Fixtures.path("images/formats"), "--dest", directory.url(name)] + extra)
            #expect(run.status == 0, "\(run.stderr)")
            return try #require(run.stderr.firstMatch(of: /\(ratio (\d\.\d{3})\)/).map { String($0.1) }, "\(run.stderr)")
        }
        #expect(try ratio(["--always-encode"], into: "encoded") == String(stated.1), "usage.md: the ratio with --always-encode")
        #expect(try ratio([], into: "kept") == String(stated.2), "usage.md: the ratio of the demo's run")
    }
}

/// A JPEG whose scan ends early decodes with a warning ("premature end of data segment"): its own
/// bytes are damaged, so it is never kept as its variant, however small.
@Suite(.offThePool) struct DamagedOriginalTests {
    let directory = TemporaryDirectory(prefix: "imagepipe-damaged-original")

    /// The warnings `vips avg` prints decoding `path`: libvips' own report of damage, the oracle here.
    func decodeWarnings(_ path: String) throws -> String {
        let output = try CommandRunner.run(executable: "/usr/bin/env", ["vips", "avg", path])
        #expect(output.status == 0, "\(output.stderr)")
        return output.stderr.split(separator: "\n").filter { $0.contains("WARNING") }.joined(separator: "\n")
    }

    @Test func anOriginalThatDecodesOnlyWithAWarningIsReEncodedAndItsOutputDecodesCleanly() throws {
        // An upright camera JPEG whose large variant is otherwise its own bytes (see SmallerOriginalTests),
        // its entropy-coded scan cut at 60% and closed with an end-of-image marker.
        let original = Fixtures.data("images/exif-orientation/Landscape_1.jpg")
        let scan = try #require(original.firstRange(of: Data([0xFF, 0xDA]))).lowerBound
        let cut = original.prefix(scan + (original.count - scan) * 6 / 10) + Data([0xFF, 0xD9])
        let source = directory.write("src/cut.jpg", cut)
        #expect(try decodeWarnings(source).contains("premature end of data segment"), "the cut original decodes with a warning")

        let run = try CommandRunner.run([
            "batch", directory.url("src"), "--dest", directory.url("out"), "--manifest", directory.url("manifest.jsonl"),
        ])
        #expect(run.status == 0, "\(run.stderr)")
        let record = try #require(try ManifestReader.read(directory.url("manifest.jsonl")).first)
        let large = try #require(record.variants.first { $0.name == "large" })
        #expect(!large.encoding.keptOriginal && large.encoding.quality != nil, "re-encoded, not kept: \(large)")
        let stored = directory.url("out/" + large.key)
        #expect(try decodeWarnings(stored) == "", "the output decodes without a warning")
    }
}
