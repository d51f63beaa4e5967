// The size a JPEG's frame header states, read without decoding: of a kept original, and of an output a helper hands back.
//
// A reader of bytes the worker does not trust that stays in the worker's module: the worker checks
// each JPEG output a helper hands back with it (``OutputHeader``) before it is stored. It walks the
// segments' markers and lengths up to the first scan, decodes nothing, checks every offset, and is
// fuzzed (`image-end`, `output-header`). Rewriting an original without its metadata is the helper's
// (ImagePipeVips' `Containers/JPEGOriginal+Stripping.swift`).
package import Foundation

/// A JPEG original read without decoding it.
package enum JPEGOriginal {
    /// The size a JPEG's frame header gives (as stored, before any EXIF orientation), read from its
    /// segments without decoding; nil when no frame header comes before the first scan.
    package static func frameSize(_ data: Data) -> PixelSize? {
        data.withUnsafeBytes { raw -> PixelSize? in
            let bytes = raw.bindMemory(to: UInt8.self)
            guard bytes.count > 4, bytes[0] == 0xFF, bytes[1] == 0xD8 else { return nil }
            var position = 2
            while position + 3 < bytes.count, bytes[position] == 0xFF {
                let marker = bytes[position + 1]
                if marker == 0xFF {
                    position += 1
                    continue
                }
                if marker == 0xDA || marker == 0xD9 || marker == 0x01 || (0xD0...0xD7).contains(marker) { return nil }
                let length = Int(bytes[position + 2]) << 8 | Int(bytes[position + 3])
                guard length >= 2, position + 2 + length <= bytes.count else { return nil }
                switch marker {
                case 0xC0...0xC3, 0xC5...0xC7, 0xC9...0xCB, 0xCD...0xCF:
                    // Precision, then height and width.
                    guard length >= 7 else { return nil }
                    let height = Int(bytes[position + 5]) << 8 | Int(bytes[position + 6])
                    let width = Int(bytes[position + 7]) << 8 | Int(bytes[position + 8])
                    return PixelSize(width: width, height: height)
                default:
                    position += 2 + length
                }
            }
            return nil
        }
    }
}
