// The format an original's first bytes call for: its key's extension when its name has none, and how it is read.
import Foundation
#if canImport(Glibc)
import Glibc
#endif

extension SourceReader {
    /// `jpg`, `png`, `gif`, `webp`, `tif`, `heic` or `avif` from the file's signature; nil when unknown.
    static func sniffExtension(_ source: SourceFile) -> String? {
        let head: Data
        switch source.content {
        case .bytes(let data):
            head = data.prefix(16)
        case .file(let opened):
            head = (try? opened.read(count: 16)) ?? Data()
        }
        return signatureExtension(of: [UInt8](head))
    }

    /// `jpg`, `png`, `gif`, `webp`, `tif`, `heic` or `avif` from a file's first 16 bytes; nil when unknown.
    package static func signatureExtension(of bytes: [UInt8]) -> String? {
        func starts(_ prefix: [UInt8], at offset: Int = 0) -> Bool {
            bytes.count >= offset + prefix.count && Array(bytes[offset..<(offset + prefix.count)]) == prefix
        }
        if starts([0xFF, 0xD8, 0xFF]) { return "jpg" }
        if starts([0x89, 0x50, 0x4E, 0x47]) { return "png" }
        if starts(Array("GIF8".utf8)) { return "gif" }
        if starts(Array("RIFF".utf8)), starts(Array("WEBP".utf8), at: 8) { return "webp" }
        if starts([0x49, 0x49, 0x2A, 0x00]) || starts([0x4D, 0x4D, 0x00, 0x2A]) { return "tif" }
        if starts(Array("ftyp".utf8), at: 4) {
            let brand = String(decoding: bytes[8..<min(12, bytes.count)], as: UTF8.self)
            if brand.hasPrefix("avi") { return "avif" }
            if ["heic", "heix", "mif1", "msf1", "heim", "heis"].contains(brand) { return "heic" }
        }
        return nil
    }
}
