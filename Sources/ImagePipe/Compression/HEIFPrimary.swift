// A HEIF's (or AVIF's) primary item and the properties it has, read from its container alone.
//
// A reader of bytes the worker does not trust that stays in the worker's module: the worker checks
// each output a helper hands back with it (``OutputHeader``: an AVIF's or HEIC's primary item must
// state the size the helper claimed) before it is stored. It walks container boxes only, up to
// `mdat` and at most 4,096 of them, decodes nothing, checks every offset, and is fuzzed
// (`output-header`). The helper reads an original's HDR picture (ImagePipeVips' `HDRPicture`) with it too.

/// The properties of a HEIF or AVIF file's primary item: its `pitm`, matched through `ipma`'s
/// associations with the children of `ipco`. What both an original's HDR picture (its `colr`) and
/// an output's size (its `ispe`) are read from.
package enum HEIFPrimary {
    /// One property box: its type and where its content lies.
    package struct Property {
        package let type: String
        package let body: Range<Int>
    }

    /// The primary item's properties, in the order `ipma` lists them; nil for a truncated or
    /// malformed container, or one without a primary item or associations.
    package static func properties(_ bytes: UnsafeBufferPointer<UInt8>) -> [Property]? {
        var primary: Int?
        var properties: Range<Int>?
        // The ipco's children, in order: associations name them from 1.
        var list: [Property] = []
        var map: Range<Int>?
        GainMap.walk(bytes, 0..<bytes.count, depth: 0) { type, body in
            if let range = properties, body.lowerBound >= range.lowerBound, body.upperBound <= range.upperBound {
                list.append(Property(type: type, body: body))
                return
            }
            switch type {
            case "pitm":
                // A full box: version 0 has a 16-bit item ID, later ones 32 bits.
                guard body.count >= 6 else { return }
                primary = read(bytes, body.lowerBound + 4, bytes[body.lowerBound] == 0 ? 2 : 4)
            case "ipco":
                properties = body
            case "ipma":
                map = body
            default: break
            }
        }
        guard let primary, let map else { return nil }
        return associations(bytes, map, of: primary).compactMap { $0 >= 1 && $0 <= list.count ? list[$0 - 1] : nil }
    }

    /// The property indices `ipma` associates with `item`: a full box (its flags' bit 0: 15-bit
    /// indices), an entry count, each entry an item ID (16 bits in version 0, else 32) and its
    /// associations (a byte of count, each an essential bit and an index of 7 or 15 bits).
    private static func associations(_ bytes: UnsafeBufferPointer<UInt8>, _ body: Range<Int>, of item: Int) -> [Int] {
        guard body.count >= 8 else { return [] }
        let version = bytes[body.lowerBound], wide = bytes[body.lowerBound + 3] & 1 == 1
        guard let entries = read(bytes, body.lowerBound + 4, 4) else { return [] }
        var at = body.lowerBound + 8
        for _ in 0..<min(entries, 65536) {
            let idSize = version == 0 ? 2 : 4
            guard at + idSize + 1 <= body.upperBound, let id = read(bytes, at, idSize) else { return [] }
            let count = Int(bytes[at + idSize])
            at += idSize + 1
            let size = wide ? 2 : 1
            guard at + count * size <= body.upperBound else { return [] }
            if id == item {
                return (0..<count).compactMap { index in
                    read(bytes, at + index * size, size).map { $0 & (wide ? 0x7FFF : 0x7F) }
                }
            }
            at += count * size
        }
        return []
    }

    /// A big-endian unsigned number of `size` bytes at `at`, if it lies within `bytes`.
    package static func read(_ bytes: UnsafeBufferPointer<UInt8>, _ at: Int, _ size: Int) -> Int? {
        guard at >= 0, size <= 4, at + size <= bytes.count else { return nil }
        return (0..<size).reduce(0) { $0 << 8 | Int(bytes[at + $1]) }
    }
}
