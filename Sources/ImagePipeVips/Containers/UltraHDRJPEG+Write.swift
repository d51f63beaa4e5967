// Writing an Ultra HDR JPEG: a variant's own JPEG, its gain map's JPEG after it, an MPF index and the metadata of both.
public import Foundation

extension UltraHDRJPEG {
    /// The Ultra HDR JPEG of `primary` (a variant's JPEG as encoded, its pixels and metadata
    /// untouched) and `gainMap` (the map's JPEG, without metadata), described by `metadata`.
    ///
    /// The primary gets, after its JFIF and EXIF segments: an XMP packet with `hdrgm:Version` and the
    /// container directory (added to the variant's own packet when it keeps one), ISO 21496-1's
    /// versions, and an MPF index of both images; then its other segments and its scan, unchanged.
    /// The gain map gets XMP with its numbers and ISO 21496-1's full block, then its own JPEG. So a
    /// decoder of either description (Chrome reads both, Safari ISO 21496-1) finds it, and an SDR
    /// decoder shows the primary's pixels as they were. Nil when either is no JPEG or an XMP packet
    /// would not fit its segment.
    public static func assemble(primary: Data, gainMap: Data, metadata: GainMapMetadata) -> Data? {
        let primary = [UInt8](primary), map = [UInt8](gainMap)
        guard primary.starts(with: [0xFF, 0xD8]), map.starts(with: [0xFF, 0xD8]) else { return nil }

        // The gain map: SOI, its XMP and ISO segments, then its own segments and scan.
        guard let mapXMP = GainMapMetadata.xmpPacket(metadata.gainMapXMPDescription),
            let mapXMPSegment = segment(0xE1, GainMapMetadata.xmpSignature + mapXMP)
        else { return nil }
        let mapBody = Array(map.dropFirst(2))
        let mapOut = [0xFF, 0xD8] + mapXMPSegment + segment(0xE2, GainMapMetadata.isoSignature + metadata.isoBlock)! + mapBody

        // The primary: its leading JFIF and EXIF segments, then the HDR description, then the rest.
        var lead: [UInt8] = [0xFF, 0xD8]
        var rest: [UInt8] = []
        var keptXMP: Data?
        var segments = JPEGSegments(primary)
        var inLead = true
        while let found = segments.next() {
            let bytes = Array(primary[found.start..<found.end])
            if found.marker == 0xE1, found.payload.starts(with: GainMapMetadata.xmpSignature) {
                keptXMP = Data(found.payload.dropFirst(GainMapMetadata.xmpSignature.count))
                continue
            }
            // An MPF index or ISO segment of the encoder's own would contradict the new ones.
            if found.marker == 0xE2, found.payload.starts(with: mpfSignature) || found.payload.starts(with: GainMapMetadata.isoSignature) {
                continue
            }
            let leading = found.marker == 0xE0 || (found.marker == 0xE1 && found.payload.starts(with: Array("Exif\0\0".utf8)))
            if inLead && leading {
                lead += bytes
            } else {
                inLead = false
                rest += bytes
            }
        }
        rest += primary[JPEGSegments.headerEnd(primary)...]
        guard let primaryXMP = GainMapMetadata.xmpPacket(GainMapMetadata.primaryXMPDescription(gainMapLength: mapOut.count), adding: keptXMP),
            let xmpSegment = segment(0xE1, GainMapMetadata.xmpSignature + primaryXMP)
        else { return nil }
        let isoSegment = segment(0xE2, GainMapMetadata.isoSignature + GainMapMetadata.isoVersionsOnly)!
        let before = lead + xmpSegment + isoSegment
        // The MPF segment's size does not depend on the numbers in it: laid out once for its length.
        let mpfLength = mpfSegment(primarySize: 0, gainMapSize: 0, gainMapOffset: 0).count
        let primarySize = before.count + mpfLength + rest.count
        // Offsets count from the MPF segment's TIFF header: 4 bytes of marker and length, then the signature.
        let tiffStart = before.count + 4 + mpfSignature.count
        let mpf = mpfSegment(primarySize: primarySize, gainMapSize: mapOut.count, gainMapOffset: primarySize - tiffStart)
        var out = Data(capacity: primarySize + mapOut.count)
        out.append(contentsOf: before)
        out.append(contentsOf: mpf)
        out.append(contentsOf: rest)
        out.append(contentsOf: mapOut)
        return out
    }

    /// An APPn segment of `payload`; nil when it is over a segment's 65,533 bytes.
    static func segment(_ marker: UInt8, _ payload: some Collection<UInt8>) -> [UInt8]? {
        guard payload.count <= 65_533 else { return nil }
        let length = payload.count + 2
        return [0xFF, marker, UInt8(length >> 8), UInt8(length & 0xFF)] + payload
    }

    /// The MPF index of two images, big-endian: version, number of images, and the two MP entries
    /// (the primary at 0, flagged as the baseline primary; the gain map at its offset, of no type).
    static func mpfSegment(primarySize: Int, gainMapSize: Int, gainMapOffset: Int) -> [UInt8] {
        var tiff: [UInt8] = [0x4D, 0x4D, 0x00, 0x2A, 0, 0, 0, 8]
        func u16(_ value: Int) { tiff += [UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)] }
        func u32(_ value: Int) { tiff += [UInt8(value >> 24 & 0xFF), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)] }
        let entries = 3
        // After the IFD's count, entries and next-IFD offset: the MP entries' 32 bytes.
        let entriesOffset = 8 + 2 + entries * 12 + 4
        u16(entries)
        u16(0xB000)
        u16(7)
        u32(4)
        tiff += Array("0100".utf8)
        u16(0xB001)
        u16(4)
        u32(1)
        u32(2)
        u16(0xB002)
        u16(7)
        u32(32)
        u32(entriesOffset)
        u32(0)
        // Primary: a baseline MP primary image (type 0x030000), JPEG, at 0.
        u32(0x0003_0000)
        u32(primarySize)
        u32(0)
        u16(0)
        u16(0)
        u32(0)
        u32(gainMapSize)
        u32(gainMapOffset)
        u16(0)
        u16(0)
        return segment(0xE2, mpfSignature + tiff)!
    }
}

extension UltraHDRJPEG {
    /// The Ultra HDR JPEG `original` rewritten around `primary` (its SDR picture without metadata):
    /// its own gain map, without the segments that described it, and its metadata written anew by
    /// ``assemble(primary:gainMap:metadata:)``. Nil when it has no gain map that can be used.
    public static func rewritten(_ original: Data, primary: Data) -> Data? {
        guard let found = try? gainMap(in: original) else { return nil }
        let map = [UInt8](original[found.range])
        var kept: [UInt8] = [0xFF, 0xD8]
        var segments = JPEGSegments(map)
        while let segment = segments.next() {
            let described =
                (segment.marker == 0xE1 && segment.payload.starts(with: GainMapMetadata.xmpSignature))
                || (segment.marker == 0xE2 && segment.payload.starts(with: GainMapMetadata.isoSignature))
            if !described { kept += map[segment.start..<segment.end] }
        }
        kept += map[JPEGSegments.headerEnd(map)...]
        return assemble(primary: primary, gainMap: Data(kept), metadata: found.metadata)
    }
}
