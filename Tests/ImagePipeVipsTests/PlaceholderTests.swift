import Foundation
import ImagePipe
import ImagePipeTestSupport
import ImagePipeVips
import ImagePipeVipsTestSupport
import Testing

/// ThumbHash and dominant colour, against the reference `thumbhash` package.
@Suite struct PlaceholderTests {
    static let sources = [
        "images/formats/landscape.jpg", "images/formats/tall.jpg", "images/formats/alpha.png",
        "images/formats/panorama.jpg", "images/formats/tiny.png",
    ]

    /// Opaque images only: the package's encoder fails on alpha (`round` of a tuple in 0.1.2); the
    /// decoder test below covers the alpha fixture.
    @Test(arguments: sources.filter { !$0.contains("alpha") })
    func theThumbHashIsByteForByteTheReferenceEncoders(_ source: String) throws {
        let (width, height, rgba) = try VipsProbe.placeholderPixels(Fixtures.data(source))
        let ours = [UInt8](Placeholder.thumbHash(width: width, height: height, rgba: rgba))
        let script = """
            import sys, thumbhash
            w, h = int(sys.argv[1]), int(sys.argv[2])
            print(" ".join(map(str, thumbhash.rgba_to_thumb_hash(w, h, list(sys.stdin.buffer.read())))))
            """
        let theirs = try PythonOracle.run(script, ["\(width)", "\(height)"], input: Data(rgba))
            .split(separator: " ").compactMap { UInt8($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        #expect(ours == theirs, "\(source)")
    }

    @Test(arguments: sources)
    func theReferenceDecoderReadsTheHashInTheResultBack(_ source: String) throws {
        let result = try Fixtures.compress(source)
        let placeholder = try #require(result.placeholder)
        let script = """
            import sys, base64, thumbhash
            hash = list(base64.b64decode(sys.argv[1]))
            r, g, b, a = thumbhash.thumb_hash_to_average_rgba(hash)
            print(thumbhash.thumb_hash_to_approximate_aspect_ratio(hash), round(a, 3))
            """
        let printed = try PythonOracle.run(script, [placeholder.thumbHash]).split(separator: " ")
        let ratio = try #require(Double(printed[0])), alpha = try #require(Double(printed[1].trimmingCharacters(in: .whitespacesAndNewlines)))
        // ThumbHash keeps the aspect ratio roughly, up to 7:1 (its grid is at most 7 cells a side).
        let actual = min(7, max(1.0 / 7, Double(result.sourceSize.width) / Double(result.sourceSize.height)))
        #expect(abs(log(ratio / actual)) < 0.45, "\(source): decoded ratio \(ratio), image \(actual)")
        #expect(source.contains("alpha") ? alpha < 0.95 : alpha == 1, "\(source): alpha \(alpha)")
        #expect(placeholder.color.count == 7 && placeholder.color.hasPrefix("#"))
    }

    @Test(arguments: ["images/formats/small-200x150.jpg", "images/formats/alpha.png", "images/formats/panorama.jpg"])
    func thePlaceholderPixelsAreTheMeansOfTheirBlocks(_ source: String) throws {
        let data = Fixtures.data(source)
        let image = try VipsProbe.decode(data)
        let (width, height, rgba) = try VipsProbe.placeholderPixels(data)
        let size = image.size
        #expect(max(width, height) == min(100, max(size.width, size.height)))
        // Output pixels at the corners, the middle and a few in between, each against the integer
        // mean of its block read pixel by pixel.
        for (x, y) in [(0, 0), (width - 1, 0), (0, height - 1), (width - 1, height - 1), (width / 2, height / 2), (width / 3, 2 * height / 3)] {
            let top = y * size.height / height, bottom = max(top + 1, (y + 1) * size.height / height)
            let left = x * size.width / width, right = max(left + 1, (x + 1) * size.width / width)
            var sums = [0.0, 0, 0, 0]
            for row in top..<bottom {
                for column in left..<right {
                    let pixel = image.pixel(x: column, y: row)
                    for channel in 0..<4 { sums[channel] += channel < pixel.count ? pixel[channel] : 255 }
                }
            }
            let count = Double((bottom - top) * (right - left)), at = (y * width + x) * 4
            let expected = sums.map { UInt8(($0 / count).rounded(.down)) }
            #expect(Array(rgba[at..<at + 4]) == expected, "\(source) at \(x),\(y)")
        }
    }

    /// The PNG in a data URI, checked by Pillow (each chunk's CRC, the zlib stream's Adler-32), then
    /// its pixels against the original reduced to the same grid by Pillow's box filter, and a flat
    /// colour's against the same: the mean difference per sample of each.
    static let dataURIOracle = """
        import sys, io, base64, struct, zlib
        from PIL import Image
        prefix = "data:image/png;base64,"
        uri, source = sys.argv[1], sys.argv[2]
        assert uri.startswith(prefix), uri[:40]
        png = base64.b64decode(uri[len(prefix):], validate=True)
        Image.open(io.BytesIO(png)).verify()
        at, idat = 8, b""
        while at < len(png):
            length, kind = struct.unpack(">I4s", png[at:at + 8])
            if kind == b"IDAT": idat += png[at + 8:at + 8 + length]
            at += 12 + length
        zlib.decompress(idat)
        picture = Image.open(io.BytesIO(png))
        picture.load()
        reference = Image.open(source).convert(picture.mode).resize(picture.size, Image.BOX)
        flat = reference.resize((1, 1), Image.BOX).resize(picture.size)
        def difference(a, b):
            a, b = a.convert("RGB").tobytes(), b.convert("RGB").tobytes()
            return sum(abs(x - y) for x, y in zip(a, b)) / len(a)
        print(picture.size[0], picture.size[1], picture.mode, len(png), difference(picture, reference), difference(flat, reference))
        """

    /// The tiny picture of real photos: a PNG under 300 characters as a data URI that Pillow and
    /// libvips read, in the ThumbHash's ratio, which looks like the photo: within 25 levels a sample
    /// of the photo reduced to its grid, nearer than the photo's mean colour is.
    @Test(arguments: ["images/formats/landscape.jpg", "images/formats/small-400x300.jpg", "images/formats/tiny.png", "images/formats/tall.jpg"])
    func theDataURIIsATinyPNGThatLooksLikeTheOriginal(_ source: String) throws {
        let placeholder = try #require(try Fixtures.compress(source).placeholder)
        let uri = try #require(placeholder.dataURI)
        #expect(uri.utf8.count < 300 && uri.hasPrefix("data:image/png;base64,"), "\(source): \(uri.utf8.count) characters")
        #expect(placeholder.isOpaque)
        let printed = try PythonOracle.run(Self.dataURIOracle, [uri, Fixtures.path(source)]).split(separator: " ")
        let width = try #require(Int(printed[0])), height = try #require(Int(printed[1]))
        let difference = try #require(Double(printed[4]))
        let flat = try #require(Double(printed[5].trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(printed[2] == "RGB" && max(width, height) <= 7, "\(source): \(printed)")
        #expect(difference < 25 && difference < flat, "\(source): \(difference) from the original, its mean colour \(flat)")
        // libvips reads the same PNG, in the ThumbHash's ratio (tall.jpg's 1:16 is as tall as it goes, 1:7).
        let png = try #require(Data(base64Encoded: String(uri.dropFirst("data:image/png;base64,".count))))
        let decoded = try VipsProbe.decode(png)
        #expect(decoded.size == PixelSize(width: width, height: height) && decoded.samples?.bands == 3)
        let size = try Fixtures.compress(source).sourceSize
        let ratio = min(7, max(1.0 / 7, Double(size.width) / Double(size.height)))
        #expect(abs(log(Double(width) / Double(height) / ratio)) < 0.45, "\(source): \(width)x\(height)")
    }

    /// A transparent original's picture keeps its alpha (for a page that removes it once the image
    /// loads), and says it is not opaque, so the HTML leaves it out.
    @Test func aTransparentOriginalsPictureHasItsAlpha() throws {
        let placeholder = try #require(try Fixtures.compress("images/formats/alpha.png").placeholder)
        #expect(!placeholder.isOpaque)
        let uri = try #require(placeholder.dataURI)
        #expect(uri.utf8.count < 300)
        let png = try #require(Data(base64Encoded: String(uri.dropFirst("data:image/png;base64,".count))))
        let samples = try #require(try VipsProbe.decode(png).samples)
        #expect(samples.bands == 4)
        let alphas = stride(from: 3, to: samples.bytes.count, by: 4).map { samples.bytes[$0] }
        #expect(alphas.contains { $0 < 128 } && alphas.contains { $0 > 128 }, "\(alphas)")
        let printed = try PythonOracle.run(Self.dataURIOracle, [uri, Fixtures.path("images/formats/alpha.png")]).split(separator: " ")
        #expect(printed[2] == "RGBA", "\(printed)")
    }

    /// Every shape a ThumbHash has, from 1:7 to 7:1, square, with and without alpha, stays under 300
    /// characters, the grid as large as fits: 7 pixels on the long side, fewer for a square or alpha.
    @Test func everyShapeStaysUnder300Characters() throws {
        for (width, height) in [(100, 100), (100, 75), (75, 100), (100, 86), (100, 50), (100, 14), (14, 100), (100, 1)] {
            for alpha in [false, true] {
                var rgba: [UInt8] = []
                for y in 0..<height {
                    for x in 0..<width { rgba += [UInt8(x * 255 / width), UInt8(y * 255 / height), 90, alpha && x < width / 2 ? 0 : 255] }
                }
                let placeholder = Placeholder(width: width, height: height, rgba: rgba)
                let uri = try #require(placeholder.dataURI)
                #expect(uri.utf8.count < 300, "\(width)x\(height) alpha \(alpha): \(uri.utf8.count)")
                let png = try #require(Data(base64Encoded: String(uri.dropFirst("data:image/png;base64,".count))))
                let size = try VipsProbe.decode(png).size
                #expect(max(size.width, size.height) >= (alpha ? 5 : 6), "\(width)x\(height) alpha \(alpha): \(size)")
                #expect((size.width >= size.height) == (width >= height), "\(width)x\(height): \(size)")
            }
        }
    }

    @Test func theDominantColourIsTheCommonestNotTheMean() {
        // Three quarters grey, one quarter saturated red: the mean would be a reddish grey.
        var rgba: [UInt8] = []
        for index in 0..<100 { rgba += index < 75 ? [128, 128, 128, 255] : [250, 0, 0, 255] }
        #expect(Placeholder(width: 10, height: 10, rgba: rgba).color == "#808080")
    }
}
