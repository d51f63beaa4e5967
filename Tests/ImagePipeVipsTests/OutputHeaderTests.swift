import Foundation
import ImagePipe
import ImagePipeTestSupport
import Testing

/// What a worker checks each output a helper hands back against: the format's signature and the size
/// its header states, read without decoding (``OutputHeader``), against what libvips really wrote.
@Suite struct OutputHeaderTests {
    /// Every output format, still and (where the format moves) animated, at sizes no two formats
    /// share, read back as libvips wrote it: the header states the size the encoding says.
    @Test(arguments: OutputFormat.allCases)
    func everyFormatsOutputStatesTheSizeItWasMadeAt(format: OutputFormat) throws {
        let quality = format.traits.hasQuality ? ",q70" : ""
        let spec = Fixtures.variant("v=123x45,\(format.rawValue)\(quality),cover")
        let made = try Fixtures.encoder.compress(
            SourceImage(name: "landscape.jpg", content: .bytes(Fixtures.data("images/formats/landscape.jpg"))), variants: [spec],
            limits: .default)
        let output = made.output("v")
        #expect(output.encoding.size == PixelSize(width: 123, height: 45))
        #expect(OutputHeader.size(of: [UInt8](output.data), as: format.traits.header) == PixelSize(width: 123, height: 45))
        #expect(OutputHeader.states(PixelSize(width: 123, height: 45), in: [UInt8](output.data), as: format))
        #expect(!OutputHeader.states(PixelSize(width: 45, height: 123), in: [UInt8](output.data), as: format))
        // Another format's bytes, or the same cut before its size, state nothing.
        for other in OutputFormat.allCases where other.traits.header != format.traits.header {
            #expect(OutputHeader.size(of: [UInt8](output.data), as: other.traits.header) == nil, "\(format) read as \(other)")
        }
        #expect(OutputHeader.size(of: Array([UInt8](output.data).prefix(3)), as: format.traits.header) == nil)
    }

    @Test func animatedOutputsStateTheirFramesSize() throws {
        for format in OutputFormat.allCases where format.holdsAnimation {
            let quality = format.traits.hasQuality ? ",q70" : ""
            let made = try Fixtures.compress("images/formats/animated.gif", [Fixtures.variant("m=60x60,\(format.rawValue)\(quality),cover")])
            let output = made.output("m")
            #expect(output.encoding.frames > 1, "\(format)")
            #expect(OutputHeader.size(of: [UInt8](output.data), as: format.traits.header) == output.encoding.size, "\(format)")
        }
    }

    /// An AVIF is one by its major brand, as a source is taken to be one: the same bytes naming
    /// AVIF only among their compatible brands (a file the worker would not read as AVIF) state no
    /// size (found by the output-header fuzz target).
    @Test func anAVIFOnlyByACompatibleBrandStatesNothing() throws {
        let made = try Fixtures.compress("images/formats/landscape.jpg", [Fixtures.variant("v=123x45,avif,q70,cover")])
        var bytes = [UInt8](made.output("v").data)
        #expect(OutputHeader.size(of: bytes, as: OutputFormat.avif.traits.header) == PixelSize(width: 123, height: 45))
        let ftypLength = Int(bytes[3]) | Int(bytes[2]) << 8
        let compatible = stride(from: 16, to: ftypLength, by: 4).map { String(decoding: bytes[$0..<$0 + 4], as: UTF8.self) }
        #expect(compatible.contains("avif"), "libheif lists the major brand among the compatible ones: \(compatible)")
        bytes.replaceSubrange(8..<12, with: Array("mif1".utf8))
        #expect(ImageSignature.fileExtension(of: bytes) != "avif")
        #expect(OutputHeader.size(of: bytes, as: OutputFormat.avif.traits.header) == nil)
    }

    @Test func anHTMLPageOrAnEmptyFileIsNoImageOfAnyFormat() {
        let page = Array("<!doctype html><html><body>not a picture</body></html>".utf8)
        for format in OutputFormat.allCases {
            #expect(OutputHeader.size(of: page, as: format.traits.header) == nil, "\(format)")
            #expect(OutputHeader.size(of: [], as: format.traits.header) == nil, "\(format)")
        }
    }

    /// An Ultra HDR JPEG (a gain map after the picture) states its primary picture's size.
    @Test func anHDRJPEGStatesItsPrimaryPicturesSize() throws {
        let made = try Fixtures.compress("images/hdr/ultra-hdr.jpg", [Fixtures.variant("h=300x200,jpeg,q80,hdr=keep")])
        let output = made.output("h")
        #expect(output.encoding.hdrHeadroom != nil, "a gain map was carried")
        #expect(OutputHeader.size(of: [UInt8](output.data), as: .jpeg) == output.encoding.size)
    }
}
