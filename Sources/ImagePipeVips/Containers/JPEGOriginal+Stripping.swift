// A JPEG original's own bytes with its metadata removed, for a variant the original already is, and smaller.
package import Foundation
package import ImagePipe

/// Rewrites a JPEG without decoding it: the segments that say how to decode the pixels stay, the
/// rest (EXIF, XMP, IPTC, comments, embedded thumbnails, data after the end-of-image marker) go.
extension JPEGOriginal {
    /// The original without metadata; nil when its pixels would not show as its encoded variant
    /// does: not 8-bit, CMYK or YCCK (4 components), an ICC profile that is not sRGB (the variant is
    /// converted from it), an EXIF orientation other than 1 (a variant's pixels are upright, as its
    /// record's width and height say: a viewer or CDN that drops the tag would show a turned picture
    /// on its side), or a file that does not parse to its end-of-image marker.
    ///
    /// Kept: JFIF (APP0), Adobe (APP14: how to read the colours), the tables, frame and scans.
    package static func stripped(_ data: Data, isSRGB: (Data) -> Bool) -> Data? {
        let bytes = [UInt8](data)
        guard bytes.count > 4, bytes[0] == 0xFF, bytes[1] == 0xD8 else { return nil }
        var kept: [UInt8] = []
        var jfif: [UInt8] = []
        var orientation = 1
        var profiles: [Data] = []
        var position = 2
        while true {
            guard position + 1 < bytes.count, bytes[position] == 0xFF else { return nil }
            while position + 1 < bytes.count, bytes[position + 1] == 0xFF { position += 1 }
            guard position + 3 < bytes.count else { return nil }
            let marker = bytes[position + 1]
            if marker == 0xD9 || marker == 0x01 || (0xD0...0xD7).contains(marker) { return nil }
            // A segment's length counts its own two bytes.
            let length = Int(bytes[position + 2]) << 8 | Int(bytes[position + 3])
            let end = position + 2 + length
            guard length >= 2, end <= bytes.count else { return nil }
            let segment = bytes[position..<end]
            let payload = bytes[(position + 4)..<end]
            switch marker {
            case 0xE0 where payload.starts(with: Array("JFIF\0".utf8)) && jfif.isEmpty:
                jfif = Array(segment)
            case 0xE1 where payload.starts(with: Array("Exif\0\0".utf8)):
                orientation = Self.orientation(inTIFF: Array(payload.dropFirst(6))) ?? orientation
            case 0xE2 where payload.starts(with: Array("ICC_PROFILE\0".utf8)):
                profiles.append(Data(payload.dropFirst(14)))
            case 0xEE where payload.starts(with: Array("Adobe".utf8)):
                kept += segment
            case 0xE0...0xEF, 0xFE:
                break
            case 0xC0...0xC3, 0xC5...0xC7, 0xC9...0xCB, 0xCD...0xCF:
                // Precision, then height, width and the number of components.
                guard payload.count >= 6, payload.first == 8, [1, 3].contains(payload[payload.startIndex + 5]) else { return nil }
                kept += segment
            case 0xDA:
                // The scans up to the end-of-image marker, found by the walk --dry-run uses.
                guard let eoi = ImageEnd.endOfJPEG(data), eoi > end else { return nil }
                kept += bytes[position..<eoi]
                if !profiles.isEmpty {
                    guard profiles.count == 1, isSRGB(profiles[0]) else { return nil }
                }
                guard orientation == 1 else { return nil }
                return Data([0xFF, 0xD8] + jfif + kept)
            default:
                kept += segment
            }
            position = end
        }
    }

    /// The Orientation tag (0x0112) of IFD0 in TIFF-structured EXIF data.
    private static func orientation(inTIFF tiff: [UInt8]) -> Int? {
        guard tiff.count >= 8 else { return nil }
        let little = tiff[0] == 0x49
        func read(_ offset: Int, _ count: Int) -> Int? {
            guard offset >= 0, offset + count <= tiff.count else { return nil }
            let slice = tiff[offset..<offset + count]
            return (little ? Array(slice.reversed()) : Array(slice)).reduce(0) { $0 << 8 | Int($1) }
        }
        guard let ifd = read(4, 4), let entries = read(ifd, 2) else { return nil }
        for index in 0..<entries {
            let entry = ifd + 2 + index * 12
            guard let tag = read(entry, 2) else { return nil }
            if tag == 0x0112, let value = read(entry + 8, 2), (1...8).contains(value) { return value }
        }
        return nil
    }
}
