import Foundation
import ImagePipe
import ImagePipeTestSupport
import ImagePipeVipsTestSupport
import Testing

/// The frame size read from a JPEG's segments, which decides whether an original could stand for a
/// variant before it is decoded: libvips' own header is the oracle.
@Suite struct JPEGFrameSizeTests {
    @Test(arguments: [
        "images/formats/landscape.jpg", "images/formats/tall.jpg", "images/formats/cmyk.jpg", "images/formats/progressive.jpg",
        "images/formats/grey.jpg", "images/exif-orientation/Landscape_6.jpg", "images/hdr/ultra-hdr.jpg",
    ])
    func theFrameSizeIsTheSizeLibvipsStoresTheImageAt(path: String) throws {
        let data = Fixtures.data(path)
        let info = try VipsProbe.info(data)
        let stored = PixelSize(width: info.width, height: info.height)
        #expect(JPEGOriginal.frameSize(data) == stored, "\(path)")
        // A slice of a larger buffer reads the same.
        #expect(JPEGOriginal.frameSize((Data([0]) + data).dropFirst()) == stored)
    }

    @Test func noFrameBeforeTheBytesEndOrInAnotherFormatIsNone() {
        let jpeg = Fixtures.data("images/formats/landscape.jpg")
        let frame = jpeg.firstRange(of: Data([0xFF, 0xC0])) ?? jpeg.firstRange(of: Data([0xFF, 0xC2]))!
        #expect(JPEGOriginal.frameSize(jpeg.prefix(frame.lowerBound + 5)) == nil, "cut inside the frame header")
        #expect(JPEGOriginal.frameSize(Fixtures.data("images/formats/alpha.png")) == nil)
        #expect(JPEGOriginal.frameSize(Data()) == nil)
    }
}
