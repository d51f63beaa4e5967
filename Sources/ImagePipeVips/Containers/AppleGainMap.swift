// An iPhone's HDR gain map in Ultra HDR's terms: the headroom its maker note gives, and its values remapped.
public import Foundation
import ImagePipe

/// What an iPhone's HEIC says of its gain map (an auxiliary image of 8-bit values, Rec. 709
/// encoded) and how that becomes Ultra HDR gain-map metadata.
///
/// Apple's "Applying Apple HDR effect to your photos" gives the headroom `H` from two maker-note
/// tags (HDRHeadroom, 0x0021, and HDRGain, 0x0030: a number of stops, piecewise in both), and the
/// HDR picture as `SDR · (1 + (H − 1) · g)` with `g` the map decoded to linear. Ultra HDR's boost is
/// exponential, `2^(log2(maxBoost) · g')`, so each value is remapped to
/// `g' = log2(1 + (H − 1) · g) / log2(H)` (a table of 256 entries on the 8-bit map), with the
/// smallest boost 1, the largest `H`, gamma 1 and both offsets 0: Apple's formula has none, and
/// with none the two formulas agree exactly.
public enum AppleGainMap {
    /// The maker note's signature.
    static let signature = Array("Apple iOS\0".utf8)

    /// The headroom the maker note in the EXIF block `exif` gives, or why there is none.
    public static func headroom(exif: Data) throws(GainMapMetadata.Refusal) -> Double {
        guard let block = ExifBlock(parsing: exif) else { throw GainMapMetadata.Refusal("the photo's EXIF cannot be read") }
        guard let note = block.entries.first(where: { $0.directory == .exif && $0.tag == 0x927C })?.value else {
            throw GainMapMetadata.Refusal("the photo has no maker note to give the gain map's headroom")
        }
        return try headroom(makerNote: note)
    }

    /// The headroom an Apple maker note (its bytes from `Apple iOS\0`) gives, or why there is none.
    public static func headroom(makerNote note: [UInt8]) throws(GainMapMetadata.Refusal) -> Double {
        let tags = try makerNoteTags(note, [0x0021, 0x0030])
        guard let maker33 = tags[0x0021], let maker48 = tags[0x0030] else {
            throw GainMapMetadata.Refusal("the maker note has no HDRHeadroom and HDRGain to give the gain map's headroom")
        }
        return try headroom(maker33: maker33, maker48: maker48)
    }

    /// Apple's headroom: stops from the two tags, piecewise, then `2^max(stops, 0)`.
    public static func headroom(maker33: Double, maker48: Double) throws(GainMapMetadata.Refusal) -> Double {
        guard maker33.isFinite, maker48.isFinite, abs(maker33) <= 1000, abs(maker48) <= 1000 else {
            throw GainMapMetadata.Refusal("the maker note's HDRHeadroom and HDRGain are not numbers a headroom comes from")
        }
        let stops: Double
        if maker33 < 1 {
            stops = maker48 <= 0.01 ? -20 * maker48 + 1.8 : -0.101 * maker48 + 1.601
        } else {
            stops = maker48 <= 0.01 ? -70 * maker48 + 3 : -0.303 * maker48 + 2.303
        }
        let headroom = exp2(min(GainMapMetadata.maxStops, max(stops, 0)))
        // Under a hundredth of a stop the map brightens nothing a display would show.
        guard headroom > 1.007 else { throw GainMapMetadata.Refusal("the maker note gives the gain map no headroom") }
        return headroom
    }

    /// The Ultra HDR metadata of a map remapped for headroom `headroom` (``lut(headroom:)``).
    public static func metadata(headroom: Double) -> GainMapMetadata {
        let stops = log2(headroom)
        return GainMapMetadata(
            channels: [.init(gainMapMin: 0, gainMapMax: stops, gamma: 1, offsetSDR: 0, offsetHDR: 0)], hdrCapacityMin: 0,
            hdrCapacityMax: stops)
    }

    /// For each 8-bit value of Apple's map, the 8-bit value of Ultra HDR's that boosts alike.
    public static func lut(headroom: Double) -> [UInt8] {
        let stops = log2(headroom)
        return (0..<256).map { value in
            let linear = rec709ToLinear(Double(value) / 255)
            let remapped = log2(1 + (headroom - 1) * linear) / stops
            return UInt8(min(255, max(0, (remapped * 255).rounded())))
        }
    }

    /// Rec. 709's inverse transfer function.
    static func rec709ToLinear(_ value: Double) -> Double {
        value < 0.081 ? value / 4.5 : pow((value + 0.099) / 1.099, 1 / 0.45)
    }

    /// The numbers of `wanted` tags in an Apple maker note: `Apple iOS\0`, a version, `MM`, then an IFD
    /// whose offsets count from the note's start. Rationals, signed or not, floats, doubles and
    /// integers are read; every offset is checked against the note.
    static func makerNoteTags(_ note: [UInt8], _ wanted: Set<UInt16>) throws(GainMapMetadata.Refusal) -> [UInt16: Double] {
        guard note.count >= 16, note.starts(with: signature), note[12] == 0x4D, note[13] == 0x4D else {
            throw GainMapMetadata.Refusal("the maker note is not an iPhone's")
        }
        func u16(_ at: Int) -> Int? { at >= 0 && at + 2 <= note.count ? Int(note[at]) << 8 | Int(note[at + 1]) : nil }
        func u32(_ at: Int) -> UInt32? {
            guard at >= 0, at + 4 <= note.count else { return nil }
            return UInt32(note[at]) << 24 | UInt32(note[at + 1]) << 16 | UInt32(note[at + 2]) << 8 | UInt32(note[at + 3])
        }
        guard let count = u16(14) else { return [:] }
        var found: [UInt16: Double] = [:]
        for index in 0..<min(count, 512) {
            let at = 16 + index * 12
            guard let tag = u16(at), let type = u16(at + 2), let items = u32(at + 4) else { break }
            guard wanted.contains(UInt16(tag)), items == 1 else { continue }
            let size = [5: 8, 10: 8, 11: 4, 12: 8, 3: 2, 4: 4, 9: 4][type] ?? 0
            guard size > 0 else { continue }
            let valueAt = size <= 4 ? at + 8 : Int(u32(at + 8) ?? UInt32.max)
            let value: Double?
            switch type {
            case 5, 10:
                guard let numerator = u32(valueAt), let denominator = u32(valueAt + 4), denominator != 0 else { continue }
                value =
                    type == 10
                    ? Double(Int32(bitPattern: numerator)) / Double(Int32(bitPattern: denominator))
                    : Double(numerator) / Double(denominator)
            case 11: value = u32(valueAt).map { Double(Float(bitPattern: $0)) }
            case 12:
                guard let high = u32(valueAt), let low = u32(valueAt + 4) else { continue }
                value = Double(bitPattern: UInt64(high) << 32 | UInt64(low))
            case 3: value = u16(valueAt).map(Double.init)
            case 4: value = u32(valueAt).map(Double.init)
            default: value = u32(valueAt).map { Double(Int32(bitPattern: $0)) }
            }
            if let value { found[UInt16(tag)] = value }
        }
        return found
    }
}
