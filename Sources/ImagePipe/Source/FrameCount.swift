// How many frames a GIF or WebP file holds, read from its container without decoding, so inspection knows which outputs will move.
//
// It runs in the worker, on strangers' bytes, before any image helper starts: an animated output has
// a fingerprint of its own, and whether the destination already holds it is decided from that. Only
// a file whose first 16 bytes say it may move is read further, and then only its framing (block and
// chunk lengths) is walked: nothing is decoded, every offset is checked, and it is fuzzed (`frame-count`).
public import Foundation

/// Counts the frames of an animated GIF or WebP from its block or chunk structure.
///
/// Inspection needs it before any decoder runs: an animated source's WebP and GIF outputs record
/// that they move (``VariantSpec/fingerprint(animated:)``), and whether the destination already
/// holds them is decided from that. The count is libvips' own for well-formed files (a GIF's image
/// descriptors, a WebP's `ANMF` chunks when its `VP8X` header says it is animated).
public enum FrameCount {
    /// The frames in `data`: 1 for anything that is not an animated GIF or WebP, or that is cut short
    /// before its second frame.
    public static func of(_ data: Data) -> Int {
        let bytes = [UInt8](data.prefix(16))
        if bytes.starts(with: Array("GIF8".utf8)) { return gifFrames(data) }
        if bytes.count >= 16, bytes.starts(with: Array("RIFF".utf8)), Array(bytes[8..<16]) == Array("WEBPVP8X".utf8) {
            return webpFrames(data)
        }
        return 1
    }

    /// Whether a file starting with `head` (at least 16 bytes) may be an animated GIF or WebP.
    public static func mayBeAnimated(_ head: Data) -> Bool {
        let bytes = [UInt8](head.prefix(16))
        return bytes.starts(with: Array("GIF8".utf8))
            || (bytes.count >= 16 && bytes.starts(with: Array("RIFF".utf8)) && Array(bytes[8..<16]) == Array("WEBPVP8X".utf8))
    }

    /// A GIF's image descriptors, walked past its colour tables, extensions and data sub-blocks.
    private static func gifFrames(_ data: Data) -> Int {
        let start = data.startIndex
        guard data.count >= 13 else { return 1 }
        var offset = start + 13
        let screenFlags = data[start + 10]
        if screenFlags & 0x80 != 0 { offset += 3 << (Int(screenFlags & 0x07) + 1) }
        var frames = 0
        /// Moves past a run of data sub-blocks ending in a zero-length one; false when cut short.
        func skipSubBlocks() -> Bool {
            while offset < data.endIndex {
                let length = Int(data[offset])
                offset += 1 + length
                if length == 0 { return true }
            }
            return false
        }
        while offset < data.endIndex {
            switch data[offset] {
            case 0x2C:
                // Image descriptor: 10 bytes, an optional local colour table, the LZW code size, the data.
                guard offset + 10 <= data.endIndex else { return max(frames, 1) }
                let flags = data[offset + 9]
                offset += 10
                if flags & 0x80 != 0 { offset += 3 << (Int(flags & 0x07) + 1) }
                offset += 1
                guard skipSubBlocks() else { return max(frames, 1) }
                frames += 1
            case 0x21:
                offset += 2
                guard skipSubBlocks() else { return max(frames, 1) }
            default:
                // The trailer (0x3B) or anything else ends the walk.
                return max(frames, 1)
            }
        }
        return max(frames, 1)
    }

    /// A WebP's `ANMF` chunks when its `VP8X` header carries the animation flag.
    private static func webpFrames(_ data: Data) -> Int {
        let start = data.startIndex
        guard data.count >= 21, data[start + 20] & 0x02 != 0 else { return 1 }
        var offset = start + 12
        var frames = 0
        while offset + 8 <= data.endIndex {
            let fourCC = data[offset..<offset + 4]
            let size = data[offset + 4..<offset + 8].enumerated().reduce(0) { $0 | Int($1.element) << (8 * $1.offset) }
            if fourCC.elementsEqual("ANMF".utf8) { frames += 1 }
            offset += 8 + size + (size & 1)
        }
        return max(frames, 1)
    }
}
