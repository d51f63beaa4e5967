// Reads a source once: its bytes (or its path, when too large to hold) and its SHA-256.
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A source read from disk.
public struct SourceFile: Sendable {
    /// The content handed to the compressor.
    public var content: SourceImage.Content
    /// Hex SHA-256 of the bytes.
    public var sha256: String
    /// Size in bytes.
    public var byteCount: Int
}

/// Reads sources without ever writing to them.
public enum SourceReader {
    /// Reads `path`; files up to `inMemoryLimit` bytes are read whole (one read serves both the hash
    /// and the decoder), larger ones are hashed in chunks and decoded from the file.
    public static func read(_ path: String, inMemoryLimit: Int = 256 << 20) throws(ImagePipeError) -> SourceFile {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw unreadable(errno) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw unreadable(errno) }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            throw ImagePipeError(.unreadableSource, "not a regular file")
        }
        let size = Int(info.st_size)
        guard size > 0 else { throw ImagePipeError(.emptyFile, "empty file (0 bytes)") }

        if size <= inMemoryLimit {
            var data = Data(count: size)
            let got = try data.withUnsafeMutableBytes { buffer in
                Result { () throws(ImagePipeError) in try readFully(fd, into: buffer) }
            }.get()
            if got < size { data.removeSubrange(got...) }
            guard got > 0 else { throw ImagePipeError(.emptyFile, "empty file (0 bytes)") }
            return SourceFile(content: .bytes(data), sha256: SHA256Digest.hash(data).hex, byteCount: got)
        }

        var hasher = SHA256Hasher()
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { chunk.deallocate() }
        var total = 0
        while true {
            let got = Glibc.read(fd, chunk.baseAddress, chunk.count)
            if got < 0 {
                if errno == EINTR { continue }
                throw unreadable(errno)
            }
            if got == 0 { break }
            hasher.update(UnsafeRawBufferPointer(rebasing: chunk[..<got]))
            total += got
        }
        return SourceFile(content: .file(path), sha256: hasher.finalize().hex, byteCount: total)
    }

    private static func readFully(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(ImagePipeError) -> Int {
        var offset = 0
        while offset < buffer.count {
            let got = Glibc.read(fd, buffer.baseAddress! + offset, buffer.count - offset)
            if got < 0 {
                if errno == EINTR { continue }
                throw unreadable(errno)
            }
            if got == 0 { break }
            offset += got
        }
        return offset
    }

    private static func unreadable(_ code: Int32) -> ImagePipeError {
        ImagePipeError(.unreadableSource, "cannot read: \(String(cString: strerror(code)))")
    }
}
