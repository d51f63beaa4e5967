// A JPEG variant that would be larger than its JPEG original at the same size is the original's bytes, with real libvips on real photos.
import Foundation
import ImagePipe
import ImagePipeTestSupport
import ImagePipeVipsTestSupport
import Testing

/// The `web` preset's `large` variant (2048 px JPEG) of 1800x1200 camera JPEGs, which encoding at
/// quality 82 made 12–14% larger than the photos themselves; two of them are upright, the others
/// turned by their EXIF orientation.
@Suite struct SmallerOriginalTests {
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
                #expect(large.keptOriginal == nil && large.quality != nil, "\(record.source)")
                let info = try VipsProbe.info(stored)
                #expect(info.width == 1800 && info.height == 1200 && info.metadata.isEmpty, "\(record.source): \(info)")
                continue
            }
            #expect(large.bytes <= original.count, "\(record.source): \(large.bytes) B from \(original.count) B")
            #expect(large.keptOriginal == true && large.quality == nil)
            #expect(reEncoded.bytes > large.bytes && reEncoded.keptOriginal == nil, "--always-encode encodes it")

            // The same pixels as the original, and no metadata.
            let difference = try VipsProbe.decode(stored).meanAbsoluteDifference(to: try VipsProbe.decode(original))
            #expect(difference == 0, "\(record.source)")
            let info = try VipsProbe.info(stored)
            #expect(info.metadata.isEmpty, "\(record.source): \(info.metadata)")
            for text in ["Exif\0\0II", "http://ns.adobe.com", "Photoshop"] {
                #expect(stored.range(of: Data(text.utf8)) == nil || original.range(of: Data(text.utf8)) == nil, "\(record.source) keeps \(text)")
            }
        }
        #expect(kept.filter { $0.variants.contains { $0.keptOriginal == true } }.count == 2, "Landscape_0 and _1, the upright ones")
    }

    @Test func aVariantOfAnotherSizeOrFormatIsEncodedAsBefore() throws {
        let kept = try batch([], into: "kept")
        for record in kept {
            for variant in record.variants where variant.name != "large" {
                #expect(variant.keptOriginal == nil && variant.quality != nil, "\(record.source) \(variant.name)")
            }
        }
    }
}
