// ISO 21496-1's binary gain map metadata, as a JPEG's APP2 segment carries it.
public import Foundation

extension GainMapMetadata {
    /// The APP2 segment's signature, before the metadata.
    public static let isoSignature = Array("urn:iso:std:iso:ts:21496:-1\0".utf8)

    private static let multiChannelFlag: UInt8 = 0x80
    private static let baseColourSpaceFlag: UInt8 = 0x40
    private static let backwardDirectionFlag: UInt8 = 0x04
    private static let commonDenominatorFlag: UInt8 = 0x08

    /// Reads ISO 21496-1 metadata (after the signature): two versions, flags, the headrooms, then
    /// per channel the smallest and largest gain, gamma and the two offsets, each a fraction.
    /// Nil for a block of versions only (a primary image's) or one this reader cannot take; a block
    /// whose base rendition is the HDR one is refused, since imagepipe's variants keep SDR as their base.
    public init?(iso bytes: some Collection<UInt8>) throws(Refusal) {
        var reader = BigEndianReader(Array(bytes.prefix(512)))
        guard let minimumVersion = reader.u16(), reader.u16() != nil else { return nil }
        guard minimumVersion == 0 else { throw Refusal("the ISO 21496-1 metadata needs a reader of version \(minimumVersion)") }
        // The primary image's block ends after its versions.
        guard let flags = reader.u8() else { return nil }
        if flags & Self.backwardDirectionFlag != 0 { throw Refusal("the gain map's base picture is the HDR one") }
        let count = flags & Self.multiChannelFlag != 0 ? 3 : 1
        func fraction(_ numerator: Int64?, _ denominator: UInt32?) throws(Refusal) -> Double {
            guard let numerator, let denominator else { throw Refusal("the ISO 21496-1 metadata is cut short") }
            guard denominator != 0 else { throw Refusal("the ISO 21496-1 metadata divides by zero") }
            return Double(numerator) / Double(denominator)
        }
        let common = flags & Self.commonDenominatorFlag != 0
        let shared = common ? reader.u32() : nil
        func next(signed: Bool) throws(Refusal) -> Double {
            let numerator = signed ? reader.s32().map(Int64.init) : reader.u32().map(Int64.init)
            return try fraction(numerator, common ? shared : reader.u32())
        }
        let baseHeadroom = try next(signed: false)
        let alternateHeadroom = try next(signed: false)
        var channels: [Channel] = []
        for _ in 0..<count {
            let low = try next(signed: true)
            let high = try next(signed: true)
            let gamma = try next(signed: false)
            let offsetSDR = try next(signed: true)
            let offsetHDR = try next(signed: true)
            channels.append(Channel(gainMapMin: low, gainMapMax: high, gamma: gamma, offsetSDR: offsetSDR, offsetHDR: offsetHDR))
        }
        self.init(channels: channels, hdrCapacityMin: baseHeadroom, hdrCapacityMax: alternateHeadroom)
    }

    /// The block of versions alone, as the primary image carries it to say a gain map follows.
    public static let isoVersionsOnly: [UInt8] = [0, 0, 0, 0]

    /// This metadata in ISO 21496-1's binary form (after the signature): each number a fraction
    /// over 2^20 (a millionth of a stop), one denominator shared, the base picture SDR in its own
    /// colour space.
    public var isoBlock: [UInt8] {
        let denominator = Double(1 << 20)
        var out: [UInt8] = [0, 0, 0, 0]
        var flags = Self.baseColourSpaceFlag | Self.commonDenominatorFlag
        if channels.count == 3 { flags |= Self.multiChannelFlag }
        out.append(flags)
        func u32(_ value: UInt32) { out += [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)] }
        func number(_ value: Double, signed: Bool) {
            let scaled = (value * denominator).rounded()
            if signed {
                u32(UInt32(bitPattern: Int32(max(Double(Int32.min), min(Double(Int32.max), scaled)))))
            } else {
                u32(UInt32(max(0, min(Double(UInt32.max), scaled))))
            }
        }
        u32(UInt32(denominator))
        number(hdrCapacityMin, signed: false)
        number(hdrCapacityMax, signed: false)
        for channel in channels {
            number(channel.gainMapMin, signed: true)
            number(channel.gainMapMax, signed: true)
            number(channel.gamma, signed: false)
            number(channel.offsetSDR, signed: true)
            number(channel.offsetHDR, signed: true)
        }
        return out
    }
}

/// Reads big-endian integers from bytes, nil past their end.
struct BigEndianReader {
    let bytes: [UInt8]
    var at = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    mutating func u8() -> UInt8? {
        guard at < bytes.count else { return nil }
        defer { at += 1 }
        return bytes[at]
    }

    mutating func u16() -> UInt16? {
        guard at + 2 <= bytes.count else { return nil }
        defer { at += 2 }
        return UInt16(bytes[at]) << 8 | UInt16(bytes[at + 1])
    }

    mutating func u32() -> UInt32? {
        guard at + 4 <= bytes.count else { return nil }
        defer { at += 4 }
        return UInt32(bytes[at]) << 24 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 8 | UInt32(bytes[at + 3])
    }

    mutating func s32() -> Int32? { u32().map { Int32(bitPattern: $0) } }
}
