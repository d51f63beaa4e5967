// Whether a HEIF or AVIF original's picture is coded for HDR (PQ or HLG), read from its container alone.
public import Foundation

/// An HEIF or AVIF original whose primary picture is coded with an HDR transfer, as its `colr`
/// box of type `nclx` (ITU-T H.273 code points) says.
///
/// libvips 8.14 ignores nclx and keeps such a picture's codes as if they were sRGB's: PQ's white
/// comes out a dull grey, HLG's midtones too bright. imagepipe tone maps them to SDR instead
/// (docs/usage.md, "HDR photos").
public struct HDRPicture: Sendable, Hashable {
    /// The transfer characteristics, BT.2100's two.
    public enum Transfer: Int, Sendable, Hashable {
        /// Perceptual quantization (SMPTE ST 2084): absolute light, up to 10,000 cd/m².
        case pq = 16
        /// Hybrid log-gamma (ARIB STD-B67): relative scene light.
        case hlg = 18
    }

    /// The transfer.
    public var transfer: Transfer
    /// The colour primaries' code point (1 BT.709, 9 BT.2020, 12 Display P3, ...).
    public var primaries: Int

    /// Creates a description.
    public init(transfer: Transfer, primaries: Int) {
        self.transfer = transfer
        self.primaries = primaries
    }

    /// The HDR picture `bytes` (a source's first ``GainMap/probedBytes`` or all of it) announce: the
    /// nclx `colr` property of the primary item (`pitm`), found through `ipma`'s associations with
    /// `ipco`'s properties, when its transfer is PQ or HLG. Nil for any other file, for a truncated or
    /// malformed container, and for a primary without nclx (an ICC profile describes SDR pictures).
    public static func announced(in data: Data) -> HDRPicture? {
        data.withUnsafeBytes { raw in
            let bytes = raw.bindMemory(to: UInt8.self)
            guard bytes.count >= 12, GainMap.fourCC(bytes, 4) == "ftyp" else { return nil }
            return primaryPicture(bytes)
        }
    }

    private static func primaryPicture(_ bytes: UnsafeBufferPointer<UInt8>) -> HDRPicture? {
        var primary: Int?
        var properties: Range<Int>?
        // The ipco's children, in order: associations name them from 1.
        var colours: [Int: HDRPicture?] = [:]
        var propertyCount = 0
        var map: Range<Int>?
        GainMap.walk(bytes, 0..<bytes.count, depth: 0) { type, body in
            if let range = properties, body.lowerBound >= range.lowerBound, body.upperBound <= range.upperBound {
                propertyCount += 1
                if type == "colr" { colours[propertyCount] = nclx(bytes, body) }
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
        return associations(bytes, map, of: primary).lazy.compactMap { colours[$0] ?? nil }.first
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

    /// A `colr` box's nclx: its type, then primaries, transfer and matrix (16 bits each) and the
    /// full-range flag. Nil for an ICC profile and for a transfer that is not HDR.
    private static func nclx(_ bytes: UnsafeBufferPointer<UInt8>, _ body: Range<Int>) -> HDRPicture? {
        guard body.count >= 11, GainMap.fourCC(bytes, body.lowerBound) == "nclx",
            let primaries = read(bytes, body.lowerBound + 4, 2), let code = read(bytes, body.lowerBound + 6, 2),
            let transfer = Transfer(rawValue: code)
        else { return nil }
        return HDRPicture(transfer: transfer, primaries: primaries)
    }

    /// A big-endian unsigned number of `size` bytes at `at`, if it lies within `bytes`.
    private static func read(_ bytes: UnsafeBufferPointer<UInt8>, _ at: Int, _ size: Int) -> Int? {
        guard at >= 0, size <= 4, at + size <= bytes.count else { return nil }
        return (0..<size).reduce(0) { $0 << 8 | Int(bytes[at + $1]) }
    }
}
