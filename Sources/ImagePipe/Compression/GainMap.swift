// Whether an original carries an HDR gain map beside its SDR picture, read from its container alone.
public import Foundation

/// An HDR gain map an original carries, and what its variants made of it.
///
/// Phones store HDR photos as an SDR picture (what every screen can show) plus a gain map that
/// brightens it on an HDR screen: Android's Ultra HDR JPEG (a second JPEG in an MPF index, described
/// by `hdrgm` XMP or ISO 21496-1 metadata), an iPhone's HEIC (an auxiliary image
/// `urn:com:apple:photo:2020:aux:hdrgainmap`), or an ISO 21496-1 `tmap` item in HEIF/AVIF. The
/// manifest says so for every such original, so that a variant without it is never taken for all
/// there was.
public struct GainMap: Sendable, Hashable, Codable {
    /// Where the gain map sits.
    public enum Kind: String, Sendable, Hashable, Codable {
        /// A JPEG with a gain-map JPEG after it in its MPF index (Android, Ultra HDR).
        case ultraHDRJPEG = "ultra_hdr_jpeg"
        /// An Apple HDR gain map, an auxiliary image of a HEIC (iPhone 12 and later).
        case appleHEIC = "apple_heic"
        /// An ISO 21496-1 tone-map item of a HEIF or AVIF.
        case isoHEIF = "iso_heif"
        /// No gain map: a HEIF or AVIF picture coded with BT.2100's PQ (``HDRPicture``), tone mapped.
        case pq
        /// No gain map: a HEIF or AVIF picture coded with BT.2100's HLG, tone mapped.
        case hlg
    }

    /// Why the variants do not carry it: a stable code the helper sends, worded by the worker.
    public enum Reason: String, Sendable, Hashable, Codable, CaseIterable {
        /// Every JPEG variant has `--hdr drop` or `hdr=drop`.
        case dropped
        /// No variant is a JPEG, the one format imagepipe writes a gain map into.
        case noJPEGVariant = "no_jpeg_variant"
        /// An iPhone's map without the maker note that gives its headroom.
        case noHeadroom = "no_headroom"
        /// The map or its metadata cannot be read, or says what no gain map can mean.
        case unreadable
        /// A kind imagepipe does not read (an ISO 21496-1 `tmap` item: libheif 1.15 shows none).
        case unsupported
        /// The map does not cover its picture (another aspect), or a variant's crop is placed by
        /// the picture's content (`attention`, `entropy`), which the map cannot follow.
        case geometry
        /// A PQ or HLG picture, whose variants are SDR pictures tone mapped from it.
        case toneMapped = "tone_mapped"

        /// The manifest's words.
        public var words: String {
            switch self {
            case .dropped: "the variants are the SDR picture alone: --hdr drop (or hdr=drop) leaves the gain map out"
            case .noJPEGVariant: "the variants are the SDR picture alone: only JPEG variants carry a gain map (Ultra HDR)"
            case .noHeadroom: "the variants are the SDR picture alone: the photo's maker note gives no usable HDR headroom"
            case .unreadable: "the variants are the SDR picture alone: the gain map or its metadata cannot be used (see the log)"
            case .unsupported: "the variants are the SDR picture alone: imagepipe does not read ISO 21496-1 gain maps in HEIF or AVIF"
            case .geometry: "the variants are the SDR picture alone: the gain map does not follow the picture's geometry"
            case .toneMapped:
                "the variants are SDR, tone mapped from the PQ or HLG picture (up to 101 cd/m² unchanged, brighter rolled off to its brightest): imagepipe writes no HDR AVIF or HEIC"
            }
        }
    }

    /// Where it sits.
    public var kind: Kind
    /// Whether the variants carry it (HDR variants); false: they are the SDR picture alone.
    public var carried: Bool
    /// Why not, when not carried (or, when some variants carry it, why the others do not).
    public var reason: String?
    /// The headroom the HDR picture needs (its brightest over SDR white), when the map was read.
    public var headroom: Double?

    /// Creates a record.
    public init(kind: Kind, carried: Bool, reason: String? = nil, headroom: Double? = nil) {
        self.kind = kind
        self.carried = carried
        self.reason = reason
        self.headroom = headroom
    }

    /// A record of a map the variants do not carry, for `reason`.
    public init(kind: Kind, notCarried reason: Reason, headroom: Double? = nil) {
        self.init(kind: kind, carried: false, reason: reason.words, headroom: headroom)
    }

    /// The stable code of ``reason``, if it is one of ``Reason``'s words.
    public var reasonCode: Reason? { Reason.allCases.first { $0.words == reason } }

    /// The bytes of its start a source is probed with: a JPEG's metadata segments and a HEIF's
    /// `meta` box come before its pixels, and phones keep both small.
    public static let probedBytes = 256 << 10

    /// The gain map `bytes` (a source's first ``probedBytes`` or all of it) announce, if any.
    /// Reads only the container: JPEG markers up to the first scan, HEIF boxes up to `mdat`; a
    /// truncated or malformed container announces none.
    public static func kind(in bytes: Data) -> Kind? {
        bytes.withUnsafeBytes { raw in
            let bytes = raw.bindMemory(to: UInt8.self)
            if bytes.count >= 4, bytes[0] == 0xFF, bytes[1] == 0xD8 { return jpegKind(bytes) }
            if bytes.count >= 12, bytes[4] == 0x66, bytes[5] == 0x74, bytes[6] == 0x79, bytes[7] == 0x70 { return heifKind(bytes) }
            return nil
        }
    }

    // MARK: - JPEG

    private static let mpfSignature = Array("MPF\0".utf8)
    private static let isoSignature = Array("urn:iso:std:iso:ts:21496:-1\0".utf8)
    private static let xmpSignature = Array("http://ns.adobe.com/xap/1.0/\0".utf8)
    private static let gainMapNamespace = Array("http://ns.adobe.com/hdr-gain-map/1.0/".utf8)

    /// An Ultra HDR JPEG: an MPF index of two images or more, and the primary's word that one of
    /// them is a gain map (ISO 21496-1's APP2 or `hdrgm` XMP). Either alone is not enough: cameras
    /// write MPF for previews, and an XMP may name the namespace without a gain map.
    private static func jpegKind(_ bytes: UnsafeBufferPointer<UInt8>) -> Kind? {
        var index = 2
        var images = 0
        var announced = false
        while index + 4 <= bytes.count, bytes[index] == 0xFF {
            let marker = bytes[index + 1]
            // Fill bytes before a marker, and markers without a length.
            if marker == 0xFF {
                index += 1
                continue
            }
            if marker == 0xD8 || marker == 0x01 || (0xD0...0xD7).contains(marker) {
                index += 2
                continue
            }
            // The first scan or the end: no metadata follows in the primary.
            if marker == 0xDA || marker == 0xD9 { break }
            let length = Int(bytes[index + 2]) << 8 | Int(bytes[index + 3])
            guard length >= 2, index + 2 + length <= bytes.count else { break }
            let payload = UnsafeBufferPointer(rebasing: bytes[(index + 4)..<(index + 2 + length)])
            if marker == 0xE2, starts(payload, with: mpfSignature) {
                images = max(images, mpfImageCount(UnsafeBufferPointer(rebasing: payload[mpfSignature.count...])))
            } else if marker == 0xE2, starts(payload, with: isoSignature) {
                announced = true
            } else if marker == 0xE1, starts(payload, with: xmpSignature), contains(payload, gainMapNamespace) {
                announced = true
            }
            index += 2 + length
        }
        return images >= 2 && announced ? .ultraHDRJPEG : nil
    }

    /// The number of images an MPF index lists (its tag 0xB001), or 0: a TIFF header, then the
    /// first IFD's entries.
    private static func mpfImageCount(_ tiff: UnsafeBufferPointer<UInt8>) -> Int {
        guard tiff.count >= 8 else { return 0 }
        let bigEndian: Bool
        switch (tiff[0], tiff[1]) {
        case (0x4D, 0x4D): bigEndian = true
        case (0x49, 0x49): bigEndian = false
        default: return 0
        }
        func read(_ offset: Int, _ size: Int) -> Int? {
            guard offset >= 0, size <= 4, offset + size <= tiff.count else { return nil }
            var value = 0
            for byte in 0..<size {
                let next = Int(tiff[offset + (bigEndian ? byte : size - 1 - byte)])
                value = value << 8 | next
            }
            return value
        }
        guard let ifd = read(4, 4), let entries = read(ifd, 2) else { return 0 }
        for entry in 0..<min(entries, 64) {
            let at = ifd + 2 + entry * 12
            guard let tag = read(at, 2) else { return 0 }
            if tag == 0xB001, let count = read(at + 8, 4) { return count }
        }
        return 0
    }

    // MARK: - HEIF

    private static let appleGainMapType = Array("urn:com:apple:photo:2020:aux:hdrgainmap".utf8)

    /// A HEIF's gain map: an `auxC` property naming Apple's gain-map type, or an item of type
    /// `tmap` (ISO 21496-1). Boxes are walked from the top (`meta`, then `iprp`/`ipco` and `iinf`),
    /// each within its parent.
    private static func heifKind(_ bytes: UnsafeBufferPointer<UInt8>) -> Kind? {
        var apple = false
        var iso = false
        walk(bytes, 0..<bytes.count, depth: 0) { type, body in
            switch type {
            case "auxC":
                // A full box: version and flags, then the auxiliary type, NUL-terminated.
                if body.count > 4, starts(UnsafeBufferPointer(rebasing: bytes[(body.lowerBound + 4)..<body.upperBound]), with: appleGainMapType) {
                    apple = true
                }
            case "infe":
                // Version 2 and 3: version and flags (4), item ID (2 or 4), protection index (2), type.
                guard body.count >= 4 else { return }
                let version = bytes[body.lowerBound]
                guard version >= 2 else { return }
                let typeAt = body.lowerBound + 4 + (version == 2 ? 2 : 4) + 2
                if typeAt + 4 <= body.upperBound, fourCC(bytes, typeAt) == "tmap" { iso = true }
            default: break
            }
        }
        // An iPhone writes both since iOS 18: Apple's own is the one its headroom describes.
        return apple ? .appleHEIC : iso ? .isoHEIF : nil
    }

    /// The boxes a gain map may hide in, and the full boxes among them (4 bytes of version and flags
    /// before their children; `iinf` has an entry count after them too).
    private static let containers: [String: Int] = ["meta": 4, "iprp": 0, "ipco": 0, "iinf": 4]

    /// Calls `visit` with each box's type and body in `range`, descending into ``containers`` up to a
    /// depth of 4. Stops at `mdat` (pixels), at a box that does not fit, and after 4,096 boxes.
    private static func walk(
        _ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, depth: Int, visited: inout Int,
        _ visit: (String, Range<Int>) -> Void
    ) {
        var at = range.lowerBound
        while at + 8 <= range.upperBound, visited < 4096 {
            visited += 1
            var size = Int(bytes[at]) << 24 | Int(bytes[at + 1]) << 16 | Int(bytes[at + 2]) << 8 | Int(bytes[at + 3])
            let type = fourCC(bytes, at + 4)
            var header = 8
            if size == 1 {
                guard at + 16 <= range.upperBound else { return }
                var large = 0
                for byte in 0..<8 { large = large << 8 | Int(bytes[at + 8 + byte]) }
                guard large >= 16, large <= range.upperBound - at else { return }
                size = large
                header = 16
            } else if size == 0 {
                size = range.upperBound - at
            }
            guard size >= header, size <= range.upperBound - at, type != "mdat" else { return }
            let body = (at + header)..<(at + size)
            visit(type, body)
            if let skip = containers[type], depth < 4 {
                var children = body.lowerBound + skip
                if type == "iinf" {
                    // Its entry count: 2 bytes in version 0, 4 after.
                    children += bytes.indices.contains(body.lowerBound) && bytes[body.lowerBound] == 0 ? 2 : 4
                }
                if children <= body.upperBound { walk(bytes, children..<body.upperBound, depth: depth + 1, visited: &visited, visit) }
            }
            at += size
        }
    }

    static func walk(
        _ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, depth: Int, _ visit: (String, Range<Int>) -> Void
    ) {
        var visited = 0
        walk(bytes, range, depth: depth, visited: &visited, visit)
    }

    // MARK: - Bytes

    static func fourCC(_ bytes: UnsafeBufferPointer<UInt8>, _ at: Int) -> String {
        guard at + 4 <= bytes.count else { return "" }
        return String(decoding: bytes[at..<(at + 4)], as: UTF8.self)
    }

    private static func starts(_ bytes: UnsafeBufferPointer<UInt8>, with prefix: [UInt8]) -> Bool {
        bytes.count >= prefix.count && zip(bytes, prefix).allSatisfy { $0 == $1 }
    }

    /// Whether `needle` occurs in `bytes` (an XMP packet is at most 64 KiB: a plain search is enough).
    private static func contains(_ bytes: UnsafeBufferPointer<UInt8>, _ needle: [UInt8]) -> Bool {
        guard let first = needle.first, bytes.count >= needle.count else { return false }
        var index = 0
        while index + needle.count <= bytes.count {
            if bytes[index] == first, starts(UnsafeBufferPointer(rebasing: bytes[index...]), with: needle) { return true }
            index += 1
        }
        return false
    }
}
