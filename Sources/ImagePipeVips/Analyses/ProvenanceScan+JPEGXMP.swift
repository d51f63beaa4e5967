// A JPEG's XMP packet from its own segments, for the path that decodes JPEGs without libvips.
package import Foundation

extension ProvenanceScan {
    private static let xmpSignature = Array("http://ns.adobe.com/xap/1.0/\0".utf8)

    /// The XMP packet of the first APP1 segment that holds one, among the segments before the first
    /// scan in `start` (a JPEG's first bytes); nil for anything else. The direct JPEG path has no
    /// libvips header whose `xmp-data` the provenance would read instead.
    package static func jpegXMP(in start: Data) -> Data? {
        start.withUnsafeBytes { raw -> Data? in
            let bytes = raw.bindMemory(to: UInt8.self)
            guard bytes.count >= 4, bytes[0] == 0xFF, bytes[1] == 0xD8 else { return nil }
            var index = 2
            while index + 4 <= bytes.count, bytes[index] == 0xFF {
                let marker = bytes[index + 1]
                if marker == 0xFF {
                    index += 1
                    continue
                }
                if marker == 0x01 || (0xD0...0xD7).contains(marker) {
                    index += 2
                    continue
                }
                if marker == 0xDA || marker == 0xD9 { return nil }
                let length = Int(bytes[index + 2]) << 8 | Int(bytes[index + 3])
                guard length >= 2, index + 2 + length <= bytes.count else { return nil }
                if marker == 0xE1, length - 2 > xmpSignature.count,
                    bytes[(index + 4)..<(index + 4 + xmpSignature.count)].elementsEqual(xmpSignature)
                {
                    return Data(bytes[(index + 4 + xmpSignature.count)..<(index + 2 + length)])
                }
                index += 2 + length
            }
            return nil
        }
    }
}
