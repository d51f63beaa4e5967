// The watermark's logo, read and decoded once when the command starts, then shared by every compression.
import CVipsShim
public import Foundation
public import ImagePipe

/// A logo file decoded into memory as 8-bit sRGB with alpha, with the SHA-256 of its bytes.
///
/// Decoded once at start-up, so a missing or unreadable logo stops the command before any image
/// is read (a configuration error, naming the file), and no image pays for decoding it again.
/// Every compression thread reads the same pixels: the image is held in memory, never written
/// after it is made, and libvips reads such an image from any thread, so it is shared as it is.
public final class WatermarkLogo: @unchecked Sendable {
    /// Hex SHA-256 of the file's bytes, recorded in every watermarked output's settings.
    public let sha256: String
    /// Its pixel size.
    public let size: PixelSize
    /// The file it was read from, for messages.
    public let path: String
    let image: VipsImageHandle

    /// Reads and decodes `path`, any image libvips reads but the loaders blocked for untrusted input.
    /// Blocking I/O.
    public convenience init(path: String) throws(ImagePipeError) {
        try self.init(bytes: try Self.read(path), path: path)
    }

    /// Decodes a logo's bytes, read from `path` beforehand: an image helper reads the file before
    /// its sandbox closes the file system, and decodes it after, once libvips' threads may start.
    public init(bytes data: Data, path: String) throws(ImagePipeError) {
        try Vips.ensureStarted()
        guard !data.isEmpty else { throw .configuration("the watermark \(path) is empty (0 bytes)") }
        defer { ipv_thread_done() }
        ipv_begin_call()
        let prepared: UnsafeMutablePointer<VipsImage>? = data.withUnsafeBytes { bytes in
            // The header reads `bytes` lazily: it is decoded here, while they are alive.
            guard let header = ipv_header_buffer(bytes.baseAddress, bytes.count, 0) else { return nil }
            defer { ipv_unref(header) }
            var out: UnsafeMutablePointer<VipsImage>?
            guard ipv_watermark_prepare(header, &out) == 0 else { return nil }
            return out
        }
        guard let prepared else {
            throw .configuration("the watermark \(path) is not an image imagepipe can read: \(Vips.takeError() ?? "no decoder took it")")
        }
        image = VipsImageHandle(prepared)
        size = image.size
        sha256 = SHA256Digest.hash(data).hex
        self.path = path
    }

    /// The file's bytes; a failure says why as the system does (`No such file or directory`).
    public static func read(_ path: String) throws(ImagePipeError) -> Data {
        func failure(_ code: Int32) -> ImagePipeError {
            .configuration("cannot read the watermark \(path): \(String(cString: strerror(code)))")
        }
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw failure(errno) }
        defer { close(descriptor) }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = buffer.withUnsafeMutableBytes { Foundation.read(descriptor, $0.baseAddress, $0.count) }
            if count == 0 { return data }
            if count < 0 {
                if errno == EINTR { continue }
                throw failure(errno)
            }
            data.append(contentsOf: buffer[..<count])
        }
    }
}
