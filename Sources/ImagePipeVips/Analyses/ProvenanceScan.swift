// What an original says about where it came from: Content Credentials (C2PA) found in its container, and the IPTC digital source type in its XMP.
package import Foundation
import ImagePipe

/// Provenance an original declares, read without decoding a pixel.
///
/// Two independent signals: a C2PA manifest store (Content Credentials) embedded in the container,
/// which the worker only detects (verifying its signatures is a job for a C2PA library), and the
/// IPTC `DigitalSourceType` in the XMP, the plain-text label generators and editors write for
/// AI-made pictures. Both are read from bytes an uploader chose, so every length is checked before
/// it is used, no arithmetic on a value from the file can overflow, and every walk stops after
/// ``maxBlocks`` steps.
package enum ProvenanceScan {
    /// The most segments, chunks or boxes one walk looks at. Real files have tens; the bound only
    /// keeps a file made of millions of empty blocks from costing millions of reads.
    static let maxBlocks = 10_000

    // MARK: - C2PA

    /// Whether the file carries Content Credentials: a C2PA manifest store. Detection only, no verification.
    ///
    /// Looks where each format's C2PA binding puts the store: a JPEG's APP11 JUMBF segments before
    /// its first scan, a PNG's `caBX` chunk, an ISO BMFF file's top-level `uuid` box with C2PA's
    /// user type, a WebP's `C2PA` chunk. Only block headers are read (and, for JPEG, the start of an
    /// APP11 payload), so a large file costs a few small reads. A block counts only when it lies
    /// whole within the file: a truncated store is no store.
    ///
    /// - Parameters:
    ///   - size: the file's length in bytes.
    ///   - read: returns up to `count` bytes at `offset` (nil past the end or on error).
    package static func carriesC2PA(size: Int, read: (Int, Int) -> Data?) -> Bool {
        guard let head = exactly(12, at: 0, size: size, read) else { return false }
        if head[0] == 0xFF, head[1] == 0xD8 { return jpegCarriesC2PA(size: size, read: read) }
        if head.starts(with: pngSignature) { return pngCarriesC2PA(size: size, read: read) }
        if head[4..<8].elementsEqual(fourCC("ftyp")) { return bmffCarriesC2PA(size: size, read: read) }
        if head[0..<4].elementsEqual(fourCC("RIFF")), head[8..<12].elementsEqual(fourCC("WEBP")) {
            return webPCarriesC2PA(size: size, read: read, riffSize: littleEndian32(head, 4))
        }
        return false
    }

    /// The eight bytes every PNG file starts with.
    private static let pngSignature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    /// The user type of the `uuid` box the C2PA ISO BMFF binding stores its manifest in:
    /// D8FEC3D6-1B0E-483C-9297-5828877EC481.
    private static let bmffUserType: [UInt8] = [
        0xD8, 0xFE, 0xC3, 0xD6, 0x1B, 0x0E, 0x48, 0x3C, 0x92, 0x97, 0x58, 0x28, 0x87, 0x7E, 0xC4, 0x81,
    ]

    /// "c2pa": how both the type UUID and the label of a manifest store's JUMBF description begin.
    private static let c2paTag = fourCC("c2pa")

    /// A JPEG: the marker segments from SOI to the first scan, looking for an APP11 segment whose
    /// JUMBF describes a C2PA store. Later APP11 segments of a large store only continue the first
    /// one's box and repeat no description, so the first is the one that says what it is.
    private static func jpegCarriesC2PA(size: Int, read: (Int, Int) -> Data?) -> Bool {
        var at = 2
        for _ in 0..<maxBlocks {
            guard let header = exactly(4, at: at, size: size, read), header[0] == 0xFF else { return false }
            let marker = header[1]
            // A fill byte before a marker, and the markers that have no length after them.
            if marker == 0xFF {
                at += 1
                continue
            }
            if marker == 0xD8 || marker == 0x01 || (0xD0...0xD7).contains(marker) {
                at += 2
                continue
            }
            // The first scan (or the end): metadata segments come before it.
            if marker == 0xDA || marker == 0xD9 { return false }
            let length = Int(header[2]) << 8 | Int(header[3])
            // `at + 4 <= size` here (four bytes were read), so the subtraction cannot go negative.
            guard length >= 2, length - 2 <= size - at - 4 else { return false }
            if marker == 0xEB, let payload = upTo(min(length - 2, jumbfPrefix), at: at + 4, size: size, read),
                describesC2PAStore(payload)
            {
                return true
            }
            at += 2 + length
        }
        return false
    }

    /// How much of an APP11 payload is read: its JPEG XT header (8 bytes), the `jumb` and `jumd`
    /// box headers (up to 16 bytes each, with 64-bit lengths), the 16-byte type UUID, the toggles
    /// byte and a five-byte label, with room to spare.
    private static let jumbfPrefix = 80

    /// Whether the start of an APP11 payload is a C2PA manifest store: JPEG XT's "JP" common
    /// identifier, a box instance number (2 bytes) and packet sequence number (4), then a JUMBF
    /// superbox (`jumb`) whose first box, its description (`jumd`), has a type UUID that begins
    /// with "c2pa" or carries the label "c2pa". Either is enough: writers set both.
    private static func describesC2PAStore(_ payload: [UInt8]) -> Bool {
        guard payload.count >= 8, payload[0] == 0x4A, payload[1] == 0x50 else { return false }
        guard let superbox = boxHeader(payload, at: 8), superbox.type.elementsEqual(fourCC("jumb")),
            let description = boxHeader(payload, at: superbox.bodyStart), description.type.elementsEqual(fourCC("jumd"))
        else { return false }
        let uuidStart = description.bodyStart
        guard payload.count - uuidStart >= 4 else { return false }
        if payload[uuidStart..<(uuidStart + 4)].elementsEqual(c2paTag) { return true }
        // The toggles byte after the 16-byte UUID; its bit 1 says a NUL-terminated label follows.
        let togglesAt = uuidStart + 16
        guard payload.count - togglesAt >= 1 + c2paTag.count + 1, payload[togglesAt] & 0x02 != 0 else { return false }
        let labelStart = togglesAt + 1
        return payload[labelStart..<(labelStart + 4)].elementsEqual(c2paTag) && payload[labelStart + 4] == 0
    }

    /// The type of the JUMBF box whose header starts at `at` in `bytes`, and where its body starts:
    /// a 4-byte length and 4-byte type, then an 8-byte length when the first is 1. Its length is
    /// not held against `bytes`: only the start of a store is read, and in a JPEG its superbox runs
    /// on across later segments.
    private static func boxHeader(_ bytes: [UInt8], at: Int) -> (type: ArraySlice<UInt8>, bodyStart: Int)? {
        guard at >= 0, bytes.count - at >= 8 else { return nil }
        let length = bigEndian(bytes, at, 4)
        let type = bytes[(at + 4)..<(at + 8)]
        if length == 1 {
            guard bytes.count - at >= 16 else { return nil }
            return (type, at + 16)
        }
        // 0 means "to the end"; anything else shorter than the header cannot be a box.
        guard length == 0 || length >= 8 else { return nil }
        return (type, at + 8)
    }

    /// A PNG: its chunks from the signature to `IEND`, looking for `caBX`, the chunk C2PA's PNG
    /// binding defines (writers put it right after `IHDR`, so the walk ends early on real files).
    private static func pngCarriesC2PA(size: Int, read: (Int, Int) -> Data?) -> Bool {
        var at = pngSignature.count
        for _ in 0..<maxBlocks {
            guard let header = exactly(8, at: at, size: size, read) else { return false }
            let length = bigEndian(header, 0, 4)
            let type = header[4..<8]
            // A chunk's data, then its 4-byte CRC, must fit in what is left; PNG caps lengths at 2^31 - 1.
            guard length <= 0x7FFF_FFFF, length <= size - at - 12 else { return false }
            if type.elementsEqual(fourCC("caBX")) { return true }
            if type.elementsEqual(fourCC("IEND")) { return false }
            at += 12 + length
        }
        return false
    }

    /// An ISO BMFF file (HEIF, HEIC, AVIF and their kin, whatever the brand after `ftyp`): its
    /// top-level boxes, looking for a `uuid` box of C2PA's user type. Only headers are read, so the
    /// picture data in `mdat` is jumped over, however large.
    private static func bmffCarriesC2PA(size: Int, read: (Int, Int) -> Data?) -> Bool {
        var at = 0
        for _ in 0..<maxBlocks {
            guard let header = exactly(8, at: at, size: size, read) else { return false }
            let compact = bigEndian(header, 0, 4)
            let remaining = size - at
            var boxSize: Int
            var headerSize = 8
            if compact == 1 {
                // A 64-bit size follows. It is compared as unsigned before it becomes an Int, so a
                // value with its top bit set cannot trap or turn negative.
                guard let large = exactly(8, at: at + 8, size: size, read) else { return false }
                let value = large.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                guard value >= 16, value <= UInt64(remaining) else { return false }
                boxSize = Int(value)
                headerSize = 16
            } else if compact == 0 {
                // The last box, running to the end of the file.
                boxSize = remaining
            } else {
                boxSize = compact
            }
            guard boxSize >= headerSize, boxSize <= remaining else { return false }
            if header[4..<8].elementsEqual(fourCC("uuid")), boxSize - headerSize >= 16,
                let userType = exactly(16, at: at + headerSize, size: size, read), userType == bmffUserType
            {
                return true
            }
            at += boxSize
        }
        return false
    }

    /// A WebP: the RIFF chunks after the `WEBP` form type, looking for a `C2PA` chunk. The RIFF
    /// size bounds the walk as it bounds a decoder's, so bytes trailing the RIFF form are not read.
    private static func webPCarriesC2PA(size: Int, read: (Int, Int) -> Data?, riffSize: Int) -> Bool {
        // `riffSize` is at most 2^32 - 1: adding 8 cannot overflow.
        let end = min(size, riffSize + 8)
        var at = 12
        for _ in 0..<maxBlocks {
            guard end - at >= 8, let header = exactly(8, at: at, size: size, read) else { return false }
            let length = littleEndian32(header, 4)
            guard length <= end - at - 8 else { return false }
            if header[0..<4].elementsEqual(fourCC("C2PA")) { return true }
            // Chunks are padded to an even length; a missing pad byte at the very end ends the loop.
            at += 8 + length + (length & 1)
        }
        return false
    }

    /// Exactly `count` bytes at `offset`, nil when they are not all within the file or the reader
    /// gives fewer (a reader that gives more is cut short).
    private static func exactly(_ count: Int, at offset: Int, size: Int, _ read: (Int, Int) -> Data?) -> [UInt8]? {
        guard offset >= 0, count >= 0, offset <= size, count <= size - offset, let data = read(offset, count),
            data.count >= count
        else { return nil }
        return [UInt8](data.prefix(count))
    }

    /// Up to `count` bytes at `offset` (fewer near the end of the file), nil when none can be read.
    private static func upTo(_ count: Int, at offset: Int, size: Int, _ read: (Int, Int) -> Data?) -> [UInt8]? {
        guard offset >= 0, count > 0, offset < size, let data = read(offset, min(count, size - offset)) else {
            return nil
        }
        return [UInt8](data.prefix(count))
    }

    /// The unsigned big-endian integer of `width` bytes (at most 4, so it always fits) at `at`;
    /// the caller has checked they are there.
    private static func bigEndian(_ bytes: [UInt8], _ at: Int, _ width: Int) -> Int {
        bytes[at..<(at + width)].reduce(0) { $0 << 8 | Int($1) }
    }

    /// The unsigned little-endian 32-bit integer at `at`; the caller has checked its four bytes are there.
    private static func littleEndian32(_ bytes: [UInt8], _ at: Int) -> Int {
        bytes[at..<(at + 4)].reversed().reduce(0) { $0 << 8 | Int($1) }
    }

    /// The bytes of a four-character code.
    private static func fourCC(_ code: StaticString) -> [UInt8] {
        code.withUTF8Buffer { [UInt8]($0) }
    }
}
