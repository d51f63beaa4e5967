// An Ultra HDR JPEG's container: the gain-map JPEG its MPF index points to, read; a variant and its gain map, written.
public import Foundation

/// The container of an Ultra HDR JPEG: a primary JPEG (the SDR picture) whose APP2 MPF index
/// names a second JPEG after it, the gain map, each described by `hdrgm` XMP and ISO 21496-1 APP2.
public enum UltraHDRJPEG {
    /// A gain map found in a source.
    public struct Found: Sendable, Hashable {
        /// Where its JPEG lies in the file.
        public var range: Range<Int>
        /// What it means, checked (``GainMapMetadata/validated()``).
        public var metadata: GainMapMetadata
    }

    static let mpfSignature = Array("MPF\0".utf8)
    /// The most MP entries read: phones write 2 or 3.
    static let maxEntries = 16

    /// The gain map of the Ultra HDR JPEG `bytes`: the first image after the primary in its MPF index
    /// that lies within the file, starts a JPEG and carries gain map metadata (ISO 21496-1 read
    /// first, as decoders do, then `hdrgm` XMP). Every offset is checked against the file before a
    /// byte is read; throws why when the file says it has a gain map that cannot be used, nil when
    /// it says nothing of one.
    public static func gainMap(in bytes: Data) throws(GainMapMetadata.Refusal) -> Found? {
        let data = [UInt8](bytes)
        guard data.count >= 4, data[0] == 0xFF, data[1] == 0xD8 else { return nil }
        var mpf: (tiff: Int, payload: ArraySlice<UInt8>)?
        for segment in JPEGSegments(data) where segment.marker == 0xE2 && segment.payload.starts(with: mpfSignature) {
            mpf = (segment.payloadStart + mpfSignature.count, segment.payload.dropFirst(mpfSignature.count))
            break
        }
        guard let mpf else { return nil }
        var lastRefusal: GainMapMetadata.Refusal?
        for entry in entries(Array(mpf.payload)).dropFirst() {
            let start = mpf.tiff + entry.offset
            guard entry.offset > 0, entry.size >= 4, start <= data.count - entry.size, data[start] == 0xFF, data[start + 1] == 0xD8 else {
                continue
            }
            let image = Array(data[start..<(start + entry.size)])
            do throws(GainMapMetadata.Refusal) {
                guard let metadata = try metadata(of: image) else { continue }
                return Found(range: start..<(start + entry.size), metadata: try metadata.validated())
            } catch {
                lastRefusal = error
            }
        }
        if let lastRefusal { throw lastRefusal }
        throw GainMapMetadata.Refusal("the MPF index names no gain-map image within the file")
    }

    /// The metadata a gain-map JPEG's own segments give: ISO 21496-1 when it is there, else `hdrgm` XMP.
    static func metadata(of image: [UInt8]) throws(GainMapMetadata.Refusal) -> GainMapMetadata? {
        var xmp: ArraySlice<UInt8>?
        for segment in JPEGSegments(image) {
            if segment.marker == 0xE2, segment.payload.starts(with: GainMapMetadata.isoSignature),
                let metadata = try GainMapMetadata(iso: segment.payload.dropFirst(GainMapMetadata.isoSignature.count))
            {
                return metadata
            }
            if segment.marker == 0xE1, xmp == nil, segment.payload.starts(with: GainMapMetadata.xmpSignature) {
                xmp = segment.payload.dropFirst(GainMapMetadata.xmpSignature.count)
            }
        }
        guard let xmp else { return nil }
        return try GainMapMetadata(xmp: xmp)
    }

    /// The MP entries (offset from the MPF header, size) of an MPF payload after its signature: a TIFF
    /// header, an IFD whose tag 0xB002 points at 16 bytes per image.
    static func entries(_ tiff: [UInt8]) -> [(offset: Int, size: Int)] {
        guard tiff.count >= 8 else { return [] }
        let bigEndian: Bool
        switch (tiff[0], tiff[1]) {
        case (0x4D, 0x4D): bigEndian = true
        case (0x49, 0x49): bigEndian = false
        default: return []
        }
        func read(_ offset: Int, _ size: Int) -> Int? {
            guard offset >= 0, offset <= tiff.count - size else { return nil }
            var value = 0
            for byte in 0..<size { value = value << 8 | Int(tiff[offset + (bigEndian ? byte : size - 1 - byte)]) }
            return value
        }
        guard let ifd = read(4, 4), let count = read(ifd, 2) else { return [] }
        for index in 0..<min(count, 64) {
            let at = ifd + 2 + index * 12
            guard let tag = read(at, 2) else { return [] }
            guard tag == 0xB002, let length = read(at + 4, 4), let offset = read(at + 8, 4) else { continue }
            var found: [(offset: Int, size: Int)] = []
            for image in 0..<min(length / 16, maxEntries) {
                guard let size = read(offset + image * 16 + 4, 4), let start = read(offset + image * 16 + 8, 4) else { break }
                found.append((start, size))
            }
            return found
        }
        return []
    }
}

/// The segments of a JPEG's header, from its SOI to its first scan: each marker's payload and where it
/// starts. Stops at a segment that does not fit.
struct JPEGSegments: Sequence, IteratorProtocol {
    struct Segment {
        var marker: UInt8
        /// Where the segment's marker starts.
        var start: Int
        /// Where its payload (after the length) starts.
        var payloadStart: Int
        var payload: ArraySlice<UInt8>
        /// Where the next segment starts.
        var end: Int { payloadStart + payload.count }
    }

    let bytes: [UInt8]
    var at = 2

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    mutating func next() -> Segment? {
        while at + 4 <= bytes.count, bytes[at] == 0xFF {
            let marker = bytes[at + 1]
            if marker == 0xFF {
                at += 1
                continue
            }
            if marker == 0xD8 || marker == 0x01 || (0xD0...0xD7).contains(marker) {
                at += 2
                continue
            }
            if marker == 0xDA || marker == 0xD9 { return nil }
            let length = Int(bytes[at + 2]) << 8 | Int(bytes[at + 3])
            guard length >= 2, at + 2 + length <= bytes.count else { return nil }
            let segment = Segment(marker: marker, start: at, payloadStart: at + 4, payload: bytes[(at + 4)..<(at + 2 + length)])
            at += 2 + length
            return segment
        }
        return nil
    }

    /// Where the segments end: the first scan's marker (or wherever reading stopped).
    static func headerEnd(_ bytes: [UInt8]) -> Int {
        var segments = JPEGSegments(bytes)
        var end = 2
        while let segment = segments.next() { end = segment.end }
        return end
    }
}
