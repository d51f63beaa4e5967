// What an encoded output's first bytes say: that it is in the format it was made for, and the size of its picture.
import Foundation

/// Reads the signature and the picture size from the start of an encoded output, without decoding it.
///
/// A worker stores what its image helpers hand back, and a helper that a hostile image took over
/// may hand back anything: an HTML page as the "JPEG" variant, or a real image of another size. So
/// each output is checked before it is stored: it must begin as its format does, and its header
/// must state the size the helper claimed for it. A parser of bytes a stranger may control: every
/// read is bounds-checked, nothing is decoded, and it is fuzzed (`output-header`).
public enum OutputHeader {
    /// How a format's files begin and where they state their size: the ``FormatTraits/header`` of
    /// each row of ``OutputFormat/traits``.
    public enum Layout: Sendable, Equatable {
        /// `FF D8 FF`, then markers up to the first start-of-frame, which states the size.
        case jpeg
        /// The PNG signature, then the IHDR chunk.
        case png
        /// `GIF87a` or `GIF89a`, then the logical screen's size.
        case gif
        /// `RIFF`, a length, `WEBP`, then a VP8, VP8L or VP8X chunk.
        case webp
        /// An ISO base media file whose `ftyp` has one of `brands` as its major brand, its primary
        /// item's `ispe` property stating the size (HEIF, AVIF).
        case heif(brands: Set<String>)
        /// A JPEG XL codestream (`FF 0A`), bare or in its container's `jxlc` or `jxlp` box, and its
        /// size header.
        case jxl
    }

    /// The picture size the header of `bytes` states, when they begin as `layout`'s format does;
    /// nil when they do not, or the header is cut short or malformed.
    public static func size(of bytes: [UInt8], as layout: Layout) -> PixelSize? {
        var reader = Reader(bytes: bytes)
        switch layout {
        case .jpeg: return jpeg(&reader)
        case .png: return png(&reader)
        case .gif: return gif(&reader)
        case .webp: return webp(&reader)
        case .heif(let brands): return heif(&reader, brands: brands)
        case .jxl: return jxl(bytes)
        }
    }

    /// Whether `bytes` are a file of `format` whose header states `size`.
    public static func states(_ size: PixelSize, in bytes: [UInt8], as format: OutputFormat) -> Bool {
        Self.size(of: bytes, as: format.traits.header) == size
    }

    // A cursor over the bytes: every read is checked against the end, and fails as nil.
    struct Reader {
        let bytes: [UInt8]
        var offset = 0

        func has(_ count: Int, at position: Int? = nil) -> Bool {
            let start = position ?? offset
            return start >= 0 && count >= 0 && start <= bytes.count && bytes.count - start >= count
        }

        func starts(with prefix: [UInt8], at position: Int = 0) -> Bool {
            has(prefix.count, at: position) && Array(bytes[position..<position + prefix.count]) == prefix
        }

        func u8(_ at: Int) -> Int? { has(1, at: at) ? Int(bytes[at]) : nil }

        func bigEndian(_ at: Int, _ count: Int) -> Int? {
            guard has(count, at: at) else { return nil }
            return bytes[at..<at + count].reduce(0) { $0 << 8 | Int($1) }
        }

        func littleEndian(_ at: Int, _ count: Int) -> Int? {
            guard has(count, at: at) else { return nil }
            return bytes[at..<at + count].reversed().reduce(0) { $0 << 8 | Int($1) }
        }

        func text(_ at: Int, _ count: Int) -> String? {
            guard has(count, at: at) else { return nil }
            return String(decoding: bytes[at..<at + count], as: UTF8.self)
        }
    }

    static func jpeg(_ reader: inout Reader) -> PixelSize? {
        // The same walk to the frame header as a kept original's (``JPEGOriginal/frameSize(_:)``).
        guard reader.starts(with: [0xFF, 0xD8, 0xFF]) else { return nil }
        return JPEGOriginal.frameSize(Data(reader.bytes))
    }

    static func png(_ reader: inout Reader) -> PixelSize? {
        guard reader.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]), reader.text(12, 4) == "IHDR",
            let width = reader.bigEndian(16, 4), let height = reader.bigEndian(20, 4)
        else { return nil }
        return PixelSize(width: width, height: height)
    }

    static func gif(_ reader: inout Reader) -> PixelSize? {
        guard reader.starts(with: Array("GIF87a".utf8)) || reader.starts(with: Array("GIF89a".utf8)),
            let width = reader.littleEndian(6, 2), let height = reader.littleEndian(8, 2)
        else { return nil }
        return PixelSize(width: width, height: height)
    }

    static func webp(_ reader: inout Reader) -> PixelSize? {
        guard reader.starts(with: Array("RIFF".utf8)), reader.starts(with: Array("WEBP".utf8), at: 8), let chunk = reader.text(12, 4) else {
            return nil
        }
        let data = 20
        switch chunk {
        case "VP8 ":
            // A key frame's tag (3 bytes), its start code, then 14-bit width and height.
            guard reader.starts(with: [0x9D, 0x01, 0x2A], at: data + 3), let width = reader.littleEndian(data + 6, 2),
                let height = reader.littleEndian(data + 8, 2)
            else { return nil }
            return PixelSize(width: width & 0x3FFF, height: height & 0x3FFF)
        case "VP8L":
            guard reader.u8(data) == 0x2F, let bits = reader.littleEndian(data + 1, 4) else { return nil }
            return PixelSize(width: (bits & 0x3FFF) + 1, height: ((bits >> 14) & 0x3FFF) + 1)
        case "VP8X":
            // The canvas, each side less one in 24 bits.
            guard let width = reader.littleEndian(data + 4, 3), let height = reader.littleEndian(data + 7, 3) else { return nil }
            return PixelSize(width: width + 1, height: height + 1)
        default:
            return nil
        }
    }

    static func heif(_ reader: inout Reader, brands wanted: Set<String>) -> PixelSize? {
        reader.bytes.withUnsafeBufferPointer { bytes -> PixelSize? in
            // The ftyp first, whose major brand must be the format's: libvips writes it so, and a
            // source is taken as HEIF or AVIF by that brand alone (ImageSignature), so an output
            // naming the format only among its compatible brands is not one the worker would read.
            guard bytes.count >= 16, GainMap.fourCC(bytes, 4) == "ftyp", let length = HEIFPrimary.read(bytes, 0, 4), length >= 16,
                length <= bytes.count, wanted.contains(GainMap.fourCC(bytes, 8)), let properties = HEIFPrimary.properties(bytes)
            else { return nil }
            var size: PixelSize?
            var quarterTurns = 0
            for property in properties {
                // ispe: a full box, then the width and height in 32 bits each.
                if property.type == "ispe", property.body.count >= 12, let width = HEIFPrimary.read(bytes, property.body.lowerBound + 4, 4),
                    let height = HEIFPrimary.read(bytes, property.body.lowerBound + 8, 4)
                {
                    size = PixelSize(width: width, height: height)
                }
                // irot: anticlockwise quarter turns in its low two bits, which swap the sides shown.
                if property.type == "irot", let angle = HEIFPrimary.read(bytes, property.body.lowerBound, 1) { quarterTurns = angle & 3 }
            }
            guard let size else { return nil }
            return quarterTurns % 2 == 1 ? PixelSize(width: size.height, height: size.width) : size
        }
    }

    static func jxl(_ bytes: [UInt8]) -> PixelSize? {
        let reader = Reader(bytes: bytes)
        var start = 0
        if reader.starts(with: [0x00, 0x00, 0x00, 0x0C, 0x4A, 0x58, 0x4C, 0x20, 0x0D, 0x0A, 0x87, 0x0A]) {
            var codestream: (type: String, body: Range<Int>)?
            bytes.withUnsafeBufferPointer { pointer in
                GainMap.walk(pointer, 0..<pointer.count, depth: 0) { type, body in
                    if codestream == nil, type == "jxlc" || type == "jxlp" { codestream = (type, body) }
                }
            }
            guard let codestream else { return nil }
            // A partial codestream's box begins with its index.
            start = codestream.body.lowerBound + (codestream.type == "jxlp" ? 4 : 0)
        }
        guard reader.starts(with: [0xFF, 0x0A], at: start) else { return nil }
        var bits = BitReader(bytes: bytes, position: (start + 2) * 8)
        // The size header: small sides as multiples of 8, else one of four widths of field; the
        // width from a ratio of the height, or stated the same way.
        func side(multipleOf8: Bool) -> Int? {
            if multipleOf8 { return bits.read(5).map { ($0 + 1) * 8 } }
            guard let selector = bits.read(2) else { return nil }
            return bits.read([9, 13, 18, 30][selector]).map { $0 + 1 }
        }
        guard let small = bits.read(1), let height = side(multipleOf8: small == 1), let ratio = bits.read(3) else { return nil }
        let ratios = [(1, 1), (12, 10), (4, 3), (3, 2), (16, 9), (5, 4), (2, 1)]
        let width: Int
        if ratio == 0 {
            guard let stated = side(multipleOf8: small == 1) else { return nil }
            width = stated
        } else {
            let (numerator, denominator) = ratios[ratio - 1]
            width = height * numerator / denominator
        }
        return PixelSize(width: width, height: height)
    }

    /// Bits read least significant first, as JPEG XL's headers are written.
    struct BitReader {
        let bytes: [UInt8]
        var position: Int

        mutating func read(_ count: Int) -> Int? {
            var value = 0
            for index in 0..<count {
                let byte = position / 8
                guard byte < bytes.count else { return nil }
                value |= Int((bytes[byte] >> UInt8(position % 8)) & 1) << index
                position += 1
            }
            return value
        }
    }
}
