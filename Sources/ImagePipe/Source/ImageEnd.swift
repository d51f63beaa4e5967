// Whether an image file reaches its format's end marker: a file cut short, found without decoding, for `--dry-run`.
//
// It runs in the worker, on strangers' bytes: `--dry-run` predicts what a run would do without
// starting a helper to decode. It walks only the framing (a JPEG's segment lengths and markers, a
// PNG's chunk lengths, a WebP's RIFF size), decodes nothing, checks every offset, and is fuzzed
// (`image-end`). The helper uses the same walk to strip a kept JPEG original.
package import Foundation

/// Walks a JPEG's segments, a PNG's chunks or a WebP's RIFF header to the end the format defines.
///
/// A header-only read cannot see that a file was cut short; a decode can, and fails
/// (`corrupt_image`). This walk costs a pass over bytes the dry run has just hashed, and tells the
/// same without decoding. Other formats (TIFF, GIF, HEIF) are not walked: nil, as for complete files.
public enum ImageEnd {
    /// Why `content` in `format` ends early; nil when it reaches its end, or is not walked.
    public static func missing(in content: SourceImage.Content, format: SourceFormat) -> String? {
        withBytes(content) { bytes in missing(in: bytes, format: format) }
    }

    private static func missing(in bytes: Bytes, format: SourceFormat) -> String? {
        switch format {
        case .jpeg: return jpegEnd(bytes) != nil ? nil : "image data ends early: the JPEG has no end-of-image marker (the file is cut short)"
        case .png: return pngEnds(bytes) ? nil : "image data ends early: the PNG stops before its IEND chunk (the file is cut short)"
        case .webp:
            guard let declared = bytes.littleEndian32(at: 4), bytes.count < declared + 8 else { return nil }
            return "image data ends early: the WebP's RIFF header declares \(declared + 8) bytes, the file has \(bytes.count)"
        default: return nil
        }
    }

    /// Where a JPEG ends: the offset just past its end-of-image marker, found as ``missing(in:format:)``
    /// finds it; nil when the file stops first or is no JPEG.
    package static func endOfJPEG(_ data: Data) -> Int? {
        withBytes(.bytes(data), jpegEnd)
    }

    /// `body` over the content's bytes: those in memory read where they are (a copy of a large
    /// original would sit outside the working memory the compressions share), a file's through a window.
    private static func withBytes<T>(_ content: SourceImage.Content, _ body: (Bytes) -> T) -> T {
        switch content {
        case .bytes(let data): data.withUnsafeBytes { body(Bytes(memory: $0)) }
        case .file(let opened): body(Bytes(file: opened))
        }
    }

    /// Segment by segment to EOI; in entropy-coded data a 0xFF byte is followed by 0x00 (stuffing),
    /// a restart marker or the next marker, so the walk needs no decoding.
    private static func jpegEnd(_ bytes: Bytes) -> Int? {
        guard bytes.byte(at: 0) == 0xFF, bytes.byte(at: 1) == 0xD8 else { return nil }
        var position = 2
        while true {
            // Fill bytes (0xFF) may precede a marker.
            guard bytes.byte(at: position) == 0xFF else { return nil }
            while bytes.byte(at: position + 1) == 0xFF { position += 1 }
            guard let marker = bytes.byte(at: position + 1) else { return nil }
            position += 2
            switch marker {
            case 0xD9: return position
            case 0x01, 0xD0...0xD7: continue
            default: break
            }
            // A segment's length counts its own two bytes.
            guard let high = bytes.byte(at: position), let low = bytes.byte(at: position + 1), Int(high) << 8 | Int(low) >= 2 else { return nil }
            position += Int(high) << 8 | Int(low)
            guard position <= bytes.count else { return nil }
            if marker == 0xDA {
                // Entropy-coded data up to the next marker.
                while true {
                    guard let byte = bytes.byte(at: position) else { return nil }
                    if byte == 0xFF, let next = bytes.byte(at: position + 1), next != 0x00, !(0xD0...0xD7).contains(next), next != 0xFF {
                        break
                    }
                    position += 1
                }
            }
        }
    }

    /// Chunk by chunk to IEND, each skipped by its length.
    private static func pngEnds(_ bytes: Bytes) -> Bool {
        var position = 8
        while let length = bytes.bigEndian32(at: position), let type = bytes.slice(at: position + 4, count: 4), type.count == 4 {
            if type.elementsEqual("IEND".utf8) { return true }
            position += 12 + length
            guard position <= bytes.count else { return false }
        }
        return false
    }

    /// Random access to the bytes, through a window of 1 MiB when they stay in a file.
    ///
    /// The walk reads every byte of a JPEG's scans, so a byte costs a buffer read: bytes in memory
    /// through their pointer (valid only inside ``withBytes(_:_:)``), a file's from an array window.
    /// (Read through the content's enum and `Data`, a byte cost a retain and a release: 0.09 ms for
    /// a 3 kB JPEG, a tenth of its whole job.)
    private final class Bytes {
        let count: Int
        private let memory: UnsafeRawBufferPointer?
        private let file: OpenedFile?
        private var window: [UInt8] = []
        private var windowStart = 0

        init(memory: UnsafeRawBufferPointer) {
            count = memory.count
            self.memory = memory
            file = nil
        }

        init(file: OpenedFile) {
            count = file.byteCount
            memory = nil
            self.file = file
        }

        func byte(at offset: Int) -> UInt8? {
            guard offset >= 0, offset < count else { return nil }
            if let memory { return memory[offset] }
            if offset < windowStart || offset >= windowStart + window.count {
                guard let file else { return nil }
                windowStart = offset
                window = [UInt8]((try? file.read(at: offset, count: 1 << 20)) ?? Data())
                guard !window.isEmpty else { return nil }
            }
            return window[offset - windowStart]
        }

        func slice(at offset: Int, count: Int) -> [UInt8]? {
            var bytes: [UInt8] = []
            for index in offset..<offset + count {
                guard let byte = byte(at: index) else { return nil }
                bytes.append(byte)
            }
            return bytes
        }

        func bigEndian32(at offset: Int) -> Int? {
            slice(at: offset, count: 4).map { $0.reduce(0) { $0 << 8 | Int($1) } }
        }

        func littleEndian32(at offset: Int) -> Int? {
            slice(at: offset, count: 4).map { $0.reversed().reduce(0) { $0 << 8 | Int($1) } }
        }
    }
}
