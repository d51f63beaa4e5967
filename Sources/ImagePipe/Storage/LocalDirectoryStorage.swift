// The embedded default storage: files under a directory, written atomically and durably, each marked with its original.
import CFileSystem
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Stores objects as files under a root directory.
///
/// Each put writes a temporary file beside the target, records the object's ``Origin`` on it as the
/// extended attribute `user.imagepipe.origin` (compact JSON), fsyncs it, then moves it into place
/// and fsyncs the directory, so a reader never sees a half-written file and a crash never leaves one
/// behind under the final name. A new key's move fails when the name is taken (`renameat2` with
/// `RENAME_NOREPLACE`, or a hard link where that is not supported): the check against replacing
/// another original's file is atomic, even between several workers.
public struct LocalDirectoryStorage: StorageRepository {
    /// The extended attribute holding each file's origin.
    public static let originAttribute = "user.imagepipe.origin"

    /// The absolute root directory.
    public let root: String
    /// Whether to fsync files and directories (on by default; off trades crash durability for speed).
    public let durable: Bool

    /// Creates the storage; nothing is created on disk before ``probe()`` or the first put.
    public init(root: String, durable: Bool = true) {
        self.root = LocalPath.absolute(root)
        self.durable = durable
    }

    public var location: String { root }

    public var keyLimits: KeyLimits { .localDirectory(root: root) }

    /// Creates the root when missing, then writes, marks and removes a probe file: a read-only or
    /// full file system, missing permissions or a file system without user extended attributes stop
    /// the command here.
    public func probe() throws(ImagePipeError) {
        do {
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        } catch {
            throw .configuration("cannot create destination directory \(root): \(IOErrorText.reason(of: error))")
        }
        var info = stat()
        guard stat(root, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
            throw .configuration("destination \(root) is not a directory")
        }
        let probe = root + "/.imagepipe-probe-\(Self.randomSuffix())"
        let fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .configuration("destination \(root) is not writable: \(String(cString: strerror(errno)))") }
        defer {
            close(fd)
            unlink(probe)
        }
        if write(fd, "x", 1) != 1 || (durable && fsync(fd) != 0) {
            throw .configuration("destination \(root) is not writable: \(String(cString: strerror(errno)))")
        }
        if fsetxattr(fd, Self.originAttribute, "{}", 2, 0) != 0 {
            throw .configuration(
                "destination \(root) does not keep extended attributes (\(String(cString: strerror(errno)))); "
                    + "imagepipe records each file's original in user.imagepipe.origin, so the file system must support user xattrs")
        }
    }

    public func put(_ object: StorageObject) throws(ImagePipeError) -> StoredObject {
        try KeyTemplate.validate(key: object.key)
        try keyLimits.check(object.key)
        let path = root + "/" + object.key
        let directory = String(path[..<path.lastIndex(of: "/")!])
        // A short fixed-length name, so a key segment at the file system's limit still fits.
        let temporary = directory + "/.imagepipe-\(Self.randomSuffix()).tmp"
        // The directory is made only when the file cannot be created for want of it: asking first
        // cost every put several stat calls. A failed job of another original may remove a directory
        // it left empty between the two steps: make it again then.
        var fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        for _ in 0..<3 where fd < 0 && errno == ENOENT {
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            } catch {
                let code = ((error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError)?.code ?? 0
                throw Self.failure(Int32(code), "cannot create directory \(directory)", default: .storageRejected)
            }
            fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        }
        guard fd >= 0 else { throw Self.failure(errno, "cannot create a file in \(directory)") }
        var closed = false
        defer { if !closed { close(fd) } }
        do throws(ImagePipeError) {
            try object.body.withUnsafeBytes { buffer in
                Result { () throws(ImagePipeError) in try Self.writeFully(fd, buffer, path: path) }
            }.get()
            if let origin = object.origin { try Self.mark(fd, origin, path: path) }
            if durable && fsync(fd) != 0 { throw Self.failure(errno, "cannot fsync \(path)") }
            closed = true
            if close(fd) != 0 { throw Self.failure(errno, "cannot close \(path)") }
            if try place(temporary, at: path, object) {
                return StoredObject(key: object.key, url: LocalPath.fileURL(path), bytes: object.body.count, wasInPlace: true)
            }
        } catch {
            unlink(temporary)
            throw error
        }
        if durable { Self.syncDirectory(directory) }
        return StoredObject(key: object.key, url: LocalPath.fileURL(path), bytes: object.body.count)
    }

    /// Moves the finished temporary file to `path` as the object's policy allows; true when the
    /// same original's identical output was found there and kept (the temporary file is dropped).
    private func place(_ temporary: String, at path: String, _ object: StorageObject) throws(ImagePipeError) -> Bool {
        guard object.origin != nil, object.policy != .replaceAny else {
            if rename(temporary, path) != 0 { throw Self.failure(errno, "cannot rename into \(path)") }
            return false
        }
        // One atomic step where the file system can (RENAME_NOREPLACE), a hard link elsewhere.
        if ifs_rename_noreplace(temporary, path) == 0 { return false }
        var linkError = errno
        if linkError == EINVAL || linkError == ENOSYS {
            if link(temporary, path) == 0 {
                unlink(temporary)
                return false
            }
            linkError = errno
        }
        guard linkError == EEXIST || linkError == EPERM || linkError == EOPNOTSUPP || linkError == EMLINK else {
            throw Self.failure(linkError, "cannot move a finished file into \(path)")
        }
        // Taken (or no hard links on this file system: then the check below is not atomic).
        if linkError == EEXIST || access(path, F_OK) == 0, try object.keepsObject(heldBy: Self.origin(atPath: path)) {
            unlink(temporary)
            return true
        }
        if rename(temporary, path) != 0 { throw Self.failure(errno, "cannot rename into \(path)") }
        return false
    }

    public func existing(_ key: String) throws(ImagePipeError) -> ExistingObject? {
        let path = root + "/" + key
        var info = stat()
        guard lstat(path, &info) == 0 else {
            if errno == ENOENT || errno == ENOTDIR { return nil }
            throw Self.failure(errno, "cannot check \(path)")
        }
        let isFile = info.st_mode & S_IFMT == S_IFREG
        return ExistingObject(
            origin: isFile ? Self.origin(atPath: path) : nil, bytes: isFile ? Int(info.st_size) : 0,
            url: LocalPath.fileURL(path))
    }

    public func delete(_ key: String) throws(ImagePipeError) {
        try KeyTemplate.validate(key: key)
        let path = root + "/" + key
        if unlink(path) != 0 && errno != ENOENT { throw Self.failure(errno, "cannot remove \(path)") }
        // Directories the removed file leaves empty go too, up to (not including) the root.
        var parts = key.split(separator: "/").dropLast()
        while !parts.isEmpty, rmdir(root + "/" + parts.joined(separator: "/")) == 0 {
            parts = parts.dropLast()
        }
    }

    /// The origin recorded on the file at `path`, if any.
    public static func origin(atPath path: String) -> Origin? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = lgetxattr(path, originAttribute, &buffer, buffer.count)
        guard count > 0 else { return nil }
        return try? JSONDecoder().decode(Origin.self, from: Data(buffer[..<count]))
    }

    private static func mark(_ fd: Int32, _ origin: Origin, path: String) throws(ImagePipeError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding plain values cannot fail.
        let json = try! encoder.encode(origin)
        let status = json.withUnsafeBytes { fsetxattr(fd, originAttribute, $0.baseAddress, $0.count, 0) }
        if status != 0 { throw failure(errno, "cannot record the original of \(path) in \(originAttribute)", default: .storageRejected) }
    }

    private static func writeFully(_ fd: Int32, _ buffer: UnsafeRawBufferPointer, path: String) throws(ImagePipeError) {
        var offset = 0
        while offset < buffer.count {
            let written = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                throw failure(errno, "cannot write \(path)")
            }
            offset += written
        }
    }

    private static func syncDirectory(_ path: String) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        close(fd)
    }

    /// Unique within the machine: the process and a counter, plus one random draw per process (a
    /// pid can be reused). A getrandom call per file was a measurable cost on small images.
    private static func randomSuffix() -> String {
        "\(processTag)-\(String(suffixCounter.add(1, ordering: .relaxed).newValue, radix: 16))"
    }

    private static let processTag = "\(getpid())\(String(UInt32.random(in: 0...UInt32.max), radix: 36))"
    private static let suffixCounter = Atomic<UInt64>(0)

    /// No space is `storageFull`; I/O and resource errors may pass; permission and path errors will not.
    static func failure(_ code: Int32, _ what: String, default fallback: ImagePipeError.Code = .storageRejected) -> ImagePipeError {
        let reason = "\(what): \(String(cString: strerror(code)))"
        switch code {
        case ENOSPC, EDQUOT: return ImagePipeError(.storageFull, reason)
        case EIO, EAGAIN, EINTR, ENOMEM, EMFILE, ENFILE: return ImagePipeError(.storageUnavailable, reason)
        default: return ImagePipeError(fallback, reason)
        }
    }
}
