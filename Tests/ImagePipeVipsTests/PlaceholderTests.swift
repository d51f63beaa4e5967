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

    @Test func theDominantColourIsTheCommonestNotTheMean() {
        // Three quarters grey, one quarter saturated red: the mean would be a reddish grey.
        var rgba: [UInt8] = []
        for index in 0..<100 { rgba += index < 75 ? [128, 128, 128, 255] : [250, 0, 0, 255] }
        #expect(Placeholder(width: 10, height: 10, rgba: rgba).color == "#808080")
    }
}
