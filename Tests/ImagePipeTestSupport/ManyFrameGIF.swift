// A GIF written byte by byte that declares a large canvas and many one-pixel frames: cheap to hold, ruinous to decode.
public import Foundation

/// Synthetic animated GIFs for the frame budget: `frames` frames of one pixel each on a canvas of
/// `width`x`height`. Every decoder composes each frame onto the full canvas, so decoding all of them
/// would take frames × width × height × 4 bytes, while the file is 23 bytes a frame. libvips'
/// GIF loader takes a canvas over 2048 pixels a side as bogus (the frame's size instead), so
/// canvases that stay within it are the ones that cost.
public enum ManyFrameGIF {
    /// The file's bytes.
    public static func make(frames: Int, width: Int, height: Int) -> Data {
        func le16(_ value: Int) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF)] }
        var bytes: [UInt8] = Array("GIF89a".utf8)
        // Logical screen: a global table of 2 colours (black, white).
        bytes += le16(width) + le16(height) + [0x80, 0, 0] + [0, 0, 0, 255, 255, 255]
        // Netscape loop extension: forever.
        bytes += [0x21, 0xFF, 11] + Array("NETSCAPE2.0".utf8) + [3, 1, 0, 0, 0]
        for index in 0..<frames {
            // Graphic control: 10 cs, no transparency; then a 1x1 frame of colour (index % 2).
            bytes += [0x21, 0xF9, 4, 0, 10, 0, 0, 0]
            bytes += [0x2C, 0, 0, 0, 0] + le16(1) + le16(1) + [0]
            bytes += index % 2 == 0 ? [2, 2, 0x44, 0x01, 0] : [2, 2, 0x4C, 0x01, 0]
        }
        bytes.append(0x3B)
        return Data(bytes)
    }
}
