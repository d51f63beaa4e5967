import Foundation
import ImagePipeTestSupport
import ImagePipe
import ImagePipeVips
import ImagePipeVipsTestSupport
import Testing

@Suite struct GeometryAndAlphaTests {
    @Test func webPresetSizes() throws {
        let result = try Fixtures.compress("images/exif-orientation/Landscape_1.jpg")
        #expect(
            result.variants.map(\.encoding.size) == [
                PixelSize(width: 1800, height: 1200), PixelSize(width: 1024, height: 683),
                PixelSize(width: 320, height: 320),
            ])
        for output in result.variants {
            let info = try VipsProbe.info(output.data)
            #expect(PixelSize(width: info.width, height: info.height) == output.encoding.size)
            #expect(info.loader.hasPrefix(output.spec.format == .jpeg ? "jpegload" : "webpload"))
        }
    }

    /// The largest variant is resampled once, straight from the source: its bytes are those of a job
    /// that makes it alone. 1800x1200 into 1000x1000 is 1000x666.67, rounded to 667, which once
    /// made the shared decode 1001x667 and the variant a second resize of it. Turned sources too.
    @Test func theLargestVariantIsMadeFromTheDecodeItself() throws {
        let big = Fixtures.variant("big=1000x1000,jpeg,q90"), small = Fixtures.variant("small=200x200,webp,q80,cover")
        for source in ["images/exif-orientation/Landscape_1.jpg", "images/exif-orientation/Landscape_6.jpg"] {
            let alone = try Fixtures.compress(source, [big])
            let together = try Fixtures.compress(source, [big, small])
            #expect(together.output("big").encoding.size == alone.output("big").encoding.size, "\(source)")
            // Compared first: a failed expectation on two Data values would diff them byte by byte.
            let identical = together.output("big").data == alone.output("big").data
            #expect(identical, "\(source): the variant was resampled twice")
        }
    }

    /// Every variant of a panorama comes out at the size it has when made alone, a strip fitted to
    /// its height included: 3200x400 into 700x700 is 700x87.5, and from a 700x88 decode a strip
    /// 40 px high would be 318 px wide, not 320.
    @Test func aPanoramasVariantsHaveTheirOwnSizesWhateverTheDecode() throws {
        let variants = ["large=700x700,jpeg,q80", "strip=2000x40,jpeg,q80", "square=100x100,webp,q80,cover"].map(Fixtures.variant)
        let together = try Fixtures.compress("images/formats/panorama.jpg", variants)
        for variant in variants {
            let alone = try Fixtures.compress("images/formats/panorama.jpg", [variant])
            #expect(together.output(variant.name).encoding.size == alone.output(variant.name).encoding.size, "\(variant.name)")
            let info = try VipsProbe.info(together.output(variant.name).data)
            #expect(PixelSize(width: info.width, height: info.height) == together.output(variant.name).encoding.size, "\(variant.name)")
        }
        #expect(together.output("strip").encoding.size == PixelSize(width: 320, height: 40))
    }

    @Test func aTinyImageIsNeverEnlargedAndItsThumbIsStillSquare() throws {
        let result = try Fixtures.compress("images/formats/tiny.png")
        #expect(result.sourceSize == PixelSize(width: 40, height: 30))
        #expect(result.output("large").encoding.size == PixelSize(width: 40, height: 30))
        #expect(result.output("medium").encoding.size == PixelSize(width: 40, height: 30))
        #expect(result.output("thumb").encoding.size == PixelSize(width: 30, height: 30))
        let thumb = try VipsProbe.info(result.output("thumb").data)
        #expect(thumb.width == 30 && thumb.height == 30)
    }

    @Test func aSourceSmallerThanTheThumbBoxGivesTheLargestSquareItHas() throws {
        let result = try Fixtures.compress("images/formats/small-400x300.jpg")
        #expect(result.output("thumb").encoding.size == PixelSize(width: 300, height: 300))
        #expect(result.output("large").encoding.size == PixelSize(width: 400, height: 300))
    }

    @Test func panoramaAndTallImages() throws {
        let panorama = try Fixtures.compress("images/formats/panorama.jpg")
        let source = panorama.sourceSize
        #expect(source.width > 4 * source.height)
        let large = panorama.output("large").encoding.size
        #expect(large.width == 2048)
        #expect(abs(Double(large.height) - 2048 * Double(source.height) / Double(source.width)) <= 1)
        #expect(panorama.output("thumb").encoding.size == PixelSize(width: 320, height: 320))

        let tall = try Fixtures.compress("images/formats/tall.jpg")
        #expect(tall.sourceSize == PixelSize(width: 150, height: 2400))
        #expect(tall.output("thumb").encoding.size == PixelSize(width: 150, height: 150))
        #expect(tall.output("medium").encoding.size == PixelSize(width: 64, height: 1024))
    }

    @Test func alphaIsKeptForWebPPNGAndAVIFAndFlattenedOntoWhiteForJPEG() throws {
        let variants = ["j=200x200,jpeg,q90", "w=200x200,webp,q90", "p=200x200,png,q100", "a=200x200,avif,q90"].map(Fixtures.variant)
        for source in ["images/formats/alpha.png", "images/formats/alpha-webp.webp"] {
            let result = try Fixtures.compress(source, variants)
            for output in result.variants {
                let info = try VipsProbe.info(output.data)
                let image = try VipsProbe.decode(output.data)
                // The fixtures are fully transparent in their left half.
                let transparent = image.pixel(x: 2, y: image.size.height / 2)
                let opaque = image.pixel(x: image.size.width - 3, y: image.size.height / 2)
                if output.spec.format == .jpeg {
                    #expect(info.bands == 3, "\(source) → jpeg has \(info.bands) bands")
                    #expect(transparent.allSatisfy { $0 > 245 }, "\(source) → jpeg transparent area is \(transparent), not white")
                } else {
                    #expect(info.bands == 4, "\(source) → \(output.spec.format) has \(info.bands) bands")
                    #expect(transparent.last == 0, "\(source) → \(output.spec.format) alpha \(transparent)")
                    #expect(opaque.last == 255, "\(source) → \(output.spec.format) alpha \(opaque)")
                }
            }
        }
    }

    @Test func multiFrameInputsUseTheirFirstFrame() throws {
        for source in ["images/formats/animated.gif", "images/formats/animated-webp.webp"] {
            let header = try VipsProbe.info(Fixtures.data(source))
            let result = try Fixtures.compress(source, [Fixtures.variant("f=1000x1000,png,q100")])
            #expect(result.sourceSize == PixelSize(width: header.width, height: header.height), "\(source): one frame's size")
            let frame = try VipsProbe.decode(result.variants[0].data)
            let first = try VipsProbe.decode(Fixtures.data(source))
            let a = frame.pixel(x: 10, y: 10), b = first.pixel(x: 10, y: 10)
            #expect(zip(a, b).allSatisfy { abs($0 - $1) < 3 }, "\(source): \(a) vs first frame \(b)")
        }
    }

    @Test(arguments: OutputFormat.allCases)
    func everyOutputFormatDecodes(_ format: OutputFormat) throws {
        let spec = VariantSpec(name: "v", width: 500, height: 500, format: format, quality: 60)
        let result = try Fixtures.compress("images/formats/landscape.jpg", [spec])
        let info = try VipsProbe.info(result.variants[0].data)
        #expect(info.loader.hasPrefix(format.traits.vipsLoader))
        #expect(info.width == 500)
    }

    @Test func sourceFormatsAreNamed() throws {
        let expected: [String: SourceFormat] = [
            "images/formats/landscape-heic.heic": .heic, "images/formats/landscape-avif.avif": .avif, "images/formats/landscape-tiff.tiff": .tiff,
            "images/formats/landscape-webp.webp": .webp, "images/formats/landscape-png.png": .png, "images/formats/animated.gif": .gif,
            "images/formats/landscape.jpg": .jpeg,
        ]
        for (path, format) in expected {
            #expect(try Fixtures.compress(path, [Fixtures.variant("t=64x64,jpeg,q50")]).sourceFormat == format, "\(path)")
        }
    }
}
