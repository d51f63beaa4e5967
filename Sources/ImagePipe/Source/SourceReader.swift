// Reads a source once: its bytes (or, when large, an open descriptor the decoder reads) and its SHA-256.
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
    /// The ETag of an object read from a store.
    public var etag: String? = nil
    /// The focal point an object's metadata gives (``FetchedObject/focus``).
    public var focus: FocalPoint? = nil
}

/// Reads sources without ever writing to them.
public enum SourceReader {
    /// Small sources are read whole: one read serves the hash and the decoder. Larger ones stay on
    /// disk while their job waits for a compression slot: they are hashed in chunks and kept open
    /// (``OpenedFile``), and the decoder reads them again from the page cache. WebP and GIF files,
    /// and every file where `/proc` is missing, are read whole up to 256 MiB and refused above.
    public static let defaultInMemoryLimit = 4 << 20

    /// Reads `path`; files up to `inMemoryLimit` bytes are read whole, larger ones are hashed in
    /// chunks and kept open for the decoder.
    ///
    /// Only a regular file is read. Its type is checked before it is opened, so a FIFO or a device
    /// is never opened, and again on the opened descriptor, so a file swapped in between cannot win;
    /// the open itself never blocks (`O_NONBLOCK`).
    ///
    /// - Parameter followingLinks: whether a symbolic link is read through to its target (a batch
    ///   over the user's own folder). Without it a link is refused (`O_NOFOLLOW`) like any other file
    ///   that is not a regular one: watch mode reads what producers deliver, and a link could point at
    ///   any file the worker may read.
    /// - Throws: `not_a_regular_file` naming the file and what it is; `unreadable_source`, `empty_file`.
    public static func read(
        _ path: RawPath, inMemoryLimit: Int = defaultInMemoryLimit, followingLinks: Bool = true
    ) throws(ImagePipeError) -> SourceFile {
        switch try read(path, imagesOnly: false, inMemoryLimit: inMemoryLimit, followingLinks: followingLinks) {
        case .image(let file): return file
        // Never: nothing is judged.
        case .notAnImage(let reason): throw ImagePipeError(.unsupportedFormat, reason)
        }
    }

    /// What reading a source found.
    public enum Outcome: Sendable {
        /// A source to decode: its bytes (or descriptor) and hash.
        case image(SourceFile)
        /// A file ``ImageSignature`` does not take as an image, with why; only its first bytes were read.
        case notAnImage(reason: String)
    }

    /// Reads `path` as ``read(_:inMemoryLimit:followingLinks:)`` does; with `imagesOnly`, after its
    /// first bytes were judged by ``ImageSignature/skipReason(head:)``: a file that is no image, an
    /// empty one included, is not read further (a folder of videos or documents costs 16 bytes a
    /// file).
    public static func read(
        _ path: RawPath, imagesOnly: Bool, inMemoryLimit: Int = defaultInMemoryLimit, followingLinks: Bool = true
    ) throws(ImagePipeError) -> Outcome {
        BlockingIO.mayBlock("read \(path)")
        guard let type = path.fileType(followingLinks: followingLinks) else { throw unreadable(errno, path) }
        guard type == S_IFREG else { throw notARegularFile(path, type, followingLinks: followingLinks) }
        let flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | (followingLinks ? 0 : O_NOFOLLOW)
        let fd = path.withCString { open($0, flags) }
        guard fd >= 0 else {
            // ELOOP: replaced by a link since the check.
            if errno == ELOOP && !followingLinks { throw notARegularFile(path, S_IFLNK, followingLinks: false) }
            throw unreadable(errno, path)
        }
        var keptOpen = false
        defer { if !keptOpen { close(fd) } }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw unreadable(errno, path) }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            throw notARegularFile(path, info.st_mode & S_IFMT, followingLinks: followingLinks)
        }
        let size = Int(info.st_size)
        // One small read serves the rule and, for a large file, the choice of how it is decoded.
        var head = [UInt8](repeating: 0, count: size > 0 ? ImageSignature.headLength : 0)
        let headCount = head.isEmpty ? 0 : pread(fd, &head, head.count, 0)
        guard headCount >= 0 else { throw unreadable(errno, path) }
        head.removeSubrange(headCount...)
        if imagesOnly, let reason = ImageSignature.skipReason(head: head) { return .notAnImage(reason: reason) }
        guard size > 0 else { throw Self.empty }

        // A large file's format decides how it is read: a small one is read whole whatever it is.
        if size <= inMemoryLimit || !OpenedFile.isAvailable || isMappedByDecoder(head) {
            // WebP and GIF files (which libvips maps) and every file where nothing can be kept open.
            guard size <= wholeFileLimit else {
                throw ImagePipeError(
                    .imageTooLarge,
                    "\(size) bytes, over the \(wholeFileLimit >> 20) MiB this format can be read in (it is read whole)")
            }
            var data = Data(count: size)
            let got = try data.withUnsafeMutableBytes { buffer in
                Result { () throws(ImagePipeError) in try readFully(fd, into: buffer, path) }
            }.get()
            if got < size { data.removeSubrange(got...) }
            guard got > 0 else { throw Self.empty }
            return .image(SourceFile(content: .bytes(data), sha256: SHA256Digest.hash(data).hex, byteCount: got))
        }

        var hasher = SHA256Hasher()
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { chunk.deallocate() }
        var total = 0
        while true {
            let got = Glibc.read(fd, chunk.baseAddress, chunk.count)
            if got < 0 {
                if errno == EINTR { continue }
                throw unreadable(errno, path)
            }
            if got == 0 { break }
            hasher.update(UnsafeRawBufferPointer(rebasing: chunk[..<got]))
            total += got
        }
        guard total > 0 else { throw Self.empty }
        // Hashed at another size than it had when opened: it is being written.
        guard total == size else { throw OpenedFile.changedError }
        keptOpen = true
        let opened = OpenedFile(taking: fd, byteCount: total, status: info)
        return .image(SourceFile(content: .file(opened), sha256: hasher.finalize().hex, byteCount: total))
    }

    /// The largest source read whole when it cannot be kept open: a WebP or GIF file, or any file
    /// without `/proc`.
    static let wholeFileLimit = 256 << 20

    /// Whether libvips 8.14 maps the file when it decodes it (its WebP and GIF loaders do): a file
    /// cut short under a mapping kills the process (SIGBUS), and those decoders take the file whole
    /// anyway. (Later libvips releases map JPEG files too; imagepipe is built on Debian's 8.14.)
    private static func isMappedByDecoder(_ head: [UInt8]) -> Bool {
        ["gif", "webp"].contains(ImageSignature.fileExtension(of: head))
    }

    private static func readFully(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, _ path: RawPath) throws(ImagePipeError) -> Int {
        var offset = 0
        while offset < buffer.count {
            let got = Glibc.read(fd, buffer.baseAddress! + offset, buffer.count - offset)
            if got < 0 {
                if errno == EINTR { continue }
                throw unreadable(errno, path)
            }
            if got == 0 { break }
            offset += got
        }
        return offset
    }

    private static func notARegularFile(_ path: RawPath, _ type: mode_t, followingLinks: Bool) -> ImagePipeError {
        let what =
            switch type {
            case S_IFLNK: followingLinks ? "a symbolic link" : "a symbolic link, which is not followed here"
            case S_IFIFO: "a FIFO"
            case S_IFSOCK: "a socket"
            case S_IFCHR: "a character device"
            case S_IFBLK: "a block device"
            case S_IFDIR: "a directory"
            default: "of another type"
            }
        return ImagePipeError(.notARegularFile, "\(path.lastComponent) is \(what), not a regular file")
    }

    /// A file with no bytes where its content was asked for (one read without being judged, or
    /// emptied after its first bytes were); the code says it is empty, the reason what was found.
    static let empty = ImagePipeError(.emptyFile, "0 bytes to read")

    /// Names the file by its absolute path: a relative one is read from the working directory, which
    /// for a worker under systemd is not the directory its producer queued the path from.
    private static func unreadable(_ code: Int32, _ path: RawPath) -> ImagePipeError {
        let given = path.escaped
        let absolute = given.hasPrefix("/") ? given : FileManager.default.currentDirectoryPath + "/" + given
        return ImagePipeError(.unreadableSource, "cannot read \(absolute): \(String(cString: strerror(code)))")
    }
}
