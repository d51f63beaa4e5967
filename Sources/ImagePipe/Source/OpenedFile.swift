// A large source kept open from its hashing to its decoding, so waiting jobs hold a descriptor, not the bytes.
public import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A regular file opened and hashed by ``SourceReader``, which the decoder reads again through the
/// same descriptor instead of bytes held in memory.
///
/// Jobs wait between their inspection and their compression; holding a large photo's bytes all
/// that time made a batch of 16 MB originals peak 120 MB higher (eight jobs in flight). The decoder
/// opens ``decoderPath``, the descriptor's own entry in `/proc/self/fd`: it is the very file that
/// was hashed even if its name has since been replaced by another file or a link, and it has an
/// offset of its own. The descriptor is closed when the last job value holding it goes away.
public final class OpenedFile: Sendable {
    /// The open descriptor, read-only.
    public let descriptor: Int32
    /// The size when it was hashed.
    public let byteCount: Int
    /// What the decoder opens: `/proc/self/fd/N`.
    public let decoderPath: String
    private let modified: Int

    /// Takes ownership of `descriptor`, a regular file of `byteCount` bytes; needs ``isAvailable``.
    init(taking descriptor: Int32, byteCount: Int, status: stat) {
        self.descriptor = descriptor
        self.byteCount = byteCount
        self.modified = Self.nanoseconds(status.st_mtim)
        self.decoderPath = "/proc/self/fd/\(descriptor)"
    }

    /// Takes ownership of a descriptor handed over by another process: an image helper's source,
    /// which it reads through the descriptor alone. Nil (and closed) when it is no regular file.
    public convenience init?(adopting descriptor: Int32) {
        var status = stat()
        guard fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else {
            close(descriptor)
            return nil
        }
        self.init(taking: descriptor, byteCount: Int(status.st_size), status: status)
    }

    /// Whether files can be kept open for the decoder: it needs `/proc`. Without it sources are read
    /// whole (opening the file again by its name could reach another file, or follow a link a watch
    /// folder must not follow).
    public static let isAvailable: Bool = access("/proc/self/fd", R_OK | X_OK) == 0

    deinit { close(descriptor) }

    /// Whether the file was written to since it was hashed (its size or modification time differ):
    /// then outputs decoded from it would not be what its hash says. The change time is not
    /// compared: it moves when the name is replaced or removed, which leaves the bytes alone.
    public var hasChanged: Bool {
        var now = stat()
        guard fstat(descriptor, &now) == 0 else { return true }
        return Int(now.st_size) != byteCount || Self.nanoseconds(now.st_mtim) != modified
    }

    /// Up to `count` bytes from `offset`, without moving any file offset.
    public func read(at offset: Int = 0, count: Int) throws(ImagePipeError) -> Data {
        var data = Data(count: count)
        var got = 0
        let failure: Int32? = data.withUnsafeMutableBytes { buffer in
            while got < count {
                let n = pread(descriptor, buffer.baseAddress! + got, count - got, off_t(offset + got))
                if n < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                if n == 0 { break }
                got += n
            }
            return nil
        }
        if let failure { throw ImagePipeError(.unreadableSource, "cannot read again: \(String(cString: strerror(failure)))") }
        if got < count { data.removeSubrange(got...) }
        return data
    }

    /// The whole file again, checked against the size it was hashed at.
    public func readAll() throws(ImagePipeError) -> Data {
        let data = try read(count: byteCount)
        guard data.count == byteCount, !hasChanged else { throw Self.changedError }
        return data
    }

    /// The failure of a job whose source changed under it.
    public static let changedError = ImagePipeError(
        .sourceChanged, "the file changed while it was being processed; nothing made from it was kept")

    private static func nanoseconds(_ time: timespec) -> Int { time.tv_sec * 1_000_000_000 + time.tv_nsec }
}
