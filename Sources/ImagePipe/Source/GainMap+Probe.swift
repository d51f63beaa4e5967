// Whether an original announces an HDR gain map, read from the container in a source's first bytes.
//
// A reader of strangers' bytes that runs in the worker, not only in the image helper: inspection
// calls it before any helper starts, since an output that will carry a gain map has a fingerprint of
// its own, and whether the destination already holds it is decided from that. It reads a bounded
// prefix (``GainMap/probedBytes``), walks JPEG markers and HEIF boxes without decoding anything,
// checks every offset, and is fuzzed (`gain-map`). What the map means is read in the helper alone
// (ImagePipeVips' `Containers/`).
public import Foundation

extension GainMap {
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

    package static func fourCC(_ bytes: UnsafeBufferPointer<UInt8>, _ at: Int) -> String {
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
