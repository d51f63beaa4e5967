import Foundation
import ImagePipeTestSupport
import ImagePipe
import ImagePipeVips
import ImagePipeVipsTestSupport
import Testing

/// Every input colour model comes out as 8-bit sRGB that looks like the sRGB original.
@Suite struct ColourTests {
    static let check = [Fixtures.variant("check=300x300,png,q100")]

    func output(_ relative: String) throws -> (VipsProbe.Info, VipsProbe.Image) {
        let data = try Fixtures.compress(relative, Self.check).variants[0].data
        return (try VipsProbe.info(data), try VipsProbe.decode(data))
    }

    @Test(arguments: [
        "images/formats/cmyk.jpg", "images/formats/display-p3.jpg", "images/formats/landscape-tiff.tiff",
        "images/formats/landscape-webp.webp", "images/formats/landscape-heic.heic", "images/formats/landscape-avif.avif",
    ])
    func convertsToSRGBMatchingTheOriginal(_ relative: String) throws {
        let (info, image) = try output(relative)
        #expect(info.interpretation == "srgb" && info.bands == 3 && info.bitsPerSample == 8, "\(info)")
        let (_, reference) = try output("images/formats/landscape-png.png")
        #expect(image.size == reference.size)
        // Lossy inputs and colour conversion shift values a little; a wrong colour model shifts them a lot.
        let difference = try #require(image.meanAbsoluteDifference(to: reference))
        #expect(difference < 8, "\(relative) differs from the sRGB original by \(difference)")
    }

    @Test(arguments: ["images/formats/rgb16.png", "images/formats/grey16.png", "images/formats/grey.jpg"])
    func deepAndGreyInputsBecomeEightBitSRGB(_ relative: String) throws {
        let source = try VipsProbe.info(Fixtures.data(relative))
        let (info, image) = try output(relative)
        #expect(info.interpretation == "srgb" && info.bands == 3 && info.bitsPerSample == 8, "\(info)")
        // 16-bit sources must be scaled to 8 bits, not clipped: a mid-grey region stays mid-grey.
        let centre = image.pixel(x: image.size.width / 2, y: image.size.height / 2)
        #expect(centre.count == 3)
        #expect(centre.allSatisfy { $0 > 5 && $0 < 250 } || source.bitsPerSample == 8, "centre pixel \(centre)")
        if source.interpretation.contains("b-w") || source.interpretation.contains("grey") {
            #expect(abs(centre[0] - centre[1]) < 2 && abs(centre[1] - centre[2]) < 2, "grey stays grey: \(centre)")
        }
    }

    /// A Display P3 photo comes out as the same colours in sRGB: compared with the photo converted
    /// by an independent colour engine (Pillow's LittleCMS build) and stored without a profile, both
    /// at full size (the pixels libvips decoded directly) and resized (a shrink-on-load decode).
    @Test(arguments: ["c=4000x4000,png", "c=300x300,png"])
    func embeddedProfilesAreConvertedToSRGB(_ spec: String) throws {
        let directory = TemporaryDirectory()
        let converted = directory.path + "/srgb.png"
        let script = """
            import io, sys
            from PIL import Image, ImageCms
            image = Image.open(sys.argv[1])
            source = ImageCms.ImageCmsProfile(io.BytesIO(image.info["icc_profile"]))
            srgb = ImageCms.profileToProfile(image, source, ImageCms.createProfile("sRGB"),
                renderingIntent=ImageCms.Intent.RELATIVE_COLORIMETRIC, outputMode="RGB")
            srgb.save(sys.argv[2])
            """
        _ = try PythonOracle.run(script, [Fixtures.path("images/formats/display-p3.jpg"), converted])
        let variants = [Fixtures.variant(spec)]
        let mine = try VipsProbe.decode(Fixtures.compress("images/formats/display-p3.jpg", variants).variants[0].data)
        let oracle = try VipsProbe.decode(
            Fixtures.compress(bytes: try Data(contentsOf: URL(fileURLWithPath: converted)), variants).variants[0].data)
        #expect(mine.size == oracle.size)
        let difference = try #require(mine.meanAbsoluteDifference(to: oracle))
        #expect(difference < 0.3, "differs from the sRGB conversion by \(difference)")
        // The same photo with its P3 values taken as sRGB (the profile ignored) is far off, or the
        // check above would prove nothing.
        if spec == "c=4000x4000,png" {
            let unconverted = try VipsProbe.decode(Fixtures.data("images/formats/display-p3.jpg"))
            #expect(try #require(unconverted.meanAbsoluteDifference(to: oracle)) > 1.5)
        }
    }

    @Test func sixteenBitMatchesItsEightBitOriginal() throws {
        let (_, deep) = try output("images/formats/rgb16.png")
        let (_, reference) = try output("images/formats/small-200x150.jpg")
        let difference = try #require(deep.meanAbsoluteDifference(to: reference))
        #expect(difference < 8, "16-bit output differs by \(difference)")
    }
}
