import Foundation
import ImagePipeTestSupport
import ImagePipe
import ImagePipeVips
import ImagePipeVipsTestSupport
import Testing

@Suite struct OrientationTests {
    static let names = (0...8).map { "images/exif-orientation/Landscape_\($0).jpg" }

    @Test func allEightOrientationsComeOutIdentical() throws {
        let lossless = [Fixtures.variant("check=600x600,png,q100")]
        let reference = try VipsProbe.decode(Fixtures.compress(Self.names[1], lossless).variants[0].data)
        #expect(reference.size == PixelSize(width: 600, height: 400))
        for name in Self.names {
            let result = try Fixtures.compress(name, lossless)
            #expect(result.sourceSize == PixelSize(width: 1800, height: 1200), "\(name) reported as displayed")
            let image = try VipsProbe.decode(result.variants[0].data)
            #expect(image.size == reference.size, "\(name)")
            // The stored files differ only by JPEG re-compression of rotated pixels, a few levels at most.
            let difference = try #require(image.meanAbsoluteDifference(to: reference))
            #expect(difference < 3, "\(name) differs by \(difference)")
        }
    }

    @Test func theComparisonCatchesAWrongRotation() throws {
        // Landscape_3 stores its pixels turned half a turn; read raw, without applying the tag, it
        // must be far from the upright photo, or the check above would prove nothing.
        let upright = try VipsProbe.decode(Fixtures.data(Self.names[1]))
        let stored = try VipsProbe.decode(Fixtures.data(Self.names[3]))
        #expect(try #require(upright.meanAbsoluteDifference(to: stored)) > 10)
    }

    @Test func metadataIsStrippedFromEveryOutput() throws {
        let source = try VipsProbe.info(Fixtures.data(Self.names[6]))
        #expect(source.metadata.contains("exif-data"))
        let result = try Fixtures.compress(
            Self.names[6], Preset.web + [Fixtures.variant("a=300x300,avif,q50"), Fixtures.variant("p=300x300,png,q1")])
        #expect(!result.variants.contains { $0.encoding.keptOriginal }, "a turned original is encoded upright, never kept")
        for output in result.variants {
            let info = try VipsProbe.info(output.data)
            #expect(info.metadata.isEmpty, "\(output.spec.name) keeps \(info.metadata)")
        }
    }
}
