// Removes EXIF, XMP and ICC chunks from a WebP file, which libvips 8.14 writes even when told to strip.
import Foundation

/// WebP's RIFF container, edited just enough to drop metadata chunks.
enum WebPMetadata {
    private static let metadataChunks: Set<String> = ["EXIF", "XMP ", "ICCP"]
    /// VP8X flag bits for ICC, EXIF and XMP.
    private static let metadataFlags: UInt8 = 0x20 | 0x08 | 0x04

    /// The file without metadata chunks, or the input itself when it has none or is not a WebP file.
    static func stripped(_ data: Data) -> Data {
        guard data.count >= 30,
            data.prefix(4) == Data("RIFF".utf8),
            data[data.startIndex + 8..<data.startIndex + 12] == Data("WEBP".utf8),
            data[data.startIndex + 12..<data.startIndex + 16] == Data("VP8X".utf8),
            data[data.startIndex + 20] & metadataFlags != 0
        else { return data }

        var output = Data(capacity: data.count)
        output.append(data.prefix(12))
        var offset = data.startIndex + 12
        while offset + 8 <= data.endIndex {
            let fourCC = String(decoding: data[offset..<offset + 4], as: UTF8.self)
            let size = data[offset + 4..<offset + 8].enumerated().reduce(0) { $0 | Int($1.element) << (8 * $1.offset) }
            let end = min(data.endIndex, offset + 8 + size + (size & 1))
            if !metadataChunks.contains(fourCC) {
                var chunk = data[offset..<end]
                if fourCC == "VP8X" {
                    chunk[offset + 8] &= ~metadataFlags
                }
                output.append(chunk)
            }
            offset = end
        }
        let riffSize = UInt32(output.count - 8)
        output.replaceSubrange(4..<8, with: withUnsafeBytes(of: riffSize.littleEndian) { Data($0) })
        return output
    }
}
