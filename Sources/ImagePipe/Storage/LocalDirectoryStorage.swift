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
/// and fsyncs the directories from it up to the root before it reports the object stored, so a
/// reader never sees a half-written file, a crash never leaves one behind under the final name, and
/// an object reported stored survives a crash. Puts that finish writing together share their
/// fsyncs (group commit, see ``GroupCommitter``): under load each round of syncs covers many files.
/// A new key's move fails when the name is taken (`renameat2` with `RENAME_NOREPLACE`, or a hard
/// link where that is not supported): the check against replacing another original's file is
/// atomic, even between several workers. A temporary file a killed run left behind is removed by a
/// later run once it is an hour old (see ``TemporarySweeper``).
public struct LocalDirectoryStorage: StorageRepository {
    /// The extended attribute holding each file's origin.
    public static let originAttribute = "user.imagepipe.origin"

    /// The absolute root directory.
    public let root: String
    /// Whether to fsync files and directories (on by default; off trades crash durability for speed).
    public let durable: Bool
    /// Makes the puts' files durable in shared rounds; shared by copies of the storage.
    private let commits: GroupCommitter
    /// Removes the temporary files killed runs left in the directories written to.
    let sweeper = TemporarySweeper()

    /// Creates the storage; nothing is created on disk before ``probe()`` or the first put.
    public init(root: String, durable: Bool = true) {
        self.root = LocalPath.absolute(root)
        self.durable = durable
        self.commits = GroupCommitter(root: self.root)
    }

    public var location: String { root }

    /// Rounds of fsyncs run so far (each covering every put that was waiting).
    var commitRounds: Int { commits.roundsRun }

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
        let outcome = Mutex<Result<StoredObject, ImagePipeError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        put(object) { result in
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return try outcome.withLock { $0! }.get()
    }

    /// Writes the object's file at once and calls `completion` once it is in place: when durable,
    /// after the round of fsyncs that covers it (see ``GroupCommitter``), so the calling thread is
    /// free while the disk catches up.
    public func put(_ object: StorageObject, completion: @escaping @Sendable (Result<StoredObject, ImagePipeError>) -> Void) {
        if durable { commits.reserve() }
        let written: WrittenFile
        do {
            written = try writeTemporary(object)
        } catch {
            if durable { commits.cancelReservation() }
            return completion(.failure(error))
        }
        guard durable else {
            return completion(Result { () throws(ImagePipeError) in try Self.closeAndPlace(written) })
        }
        commits.submit(written, completion)
    }

    /// Creates the temporary file beside the target, writes the bytes and the origin to it and
    /// leaves it open for the fsync.
    private func writeTemporary(_ object: StorageObject) throws(ImagePipeError) -> WrittenFile {
        try KeyTemplate.validate(key: object.key)
        try keyLimits.check(object.key)
        let path = root + "/" + object.key
        // The last `/` byte: a `/` followed by a combining mark is one character, not a `/`.
        let directory = String(path[..<path.utf8.lastIndex(of: UInt8(ascii: "/"))!])
        // A short fixed-length name, so a key segment at the file system's limit still fits.
        let temporary = directory + "/" + TemporarySweeper.prefix + Self.randomSuffix() + TemporarySweeper.suffix
        // The directory is made only when the file cannot be created for want of it: asking first
        // cost every put several stat calls. A failed job of another original may remove a directory
        // it left empty between the two steps: make it again then.
        var fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        var made = false
        for _ in 0..<3 where fd < 0 && errno == ENOENT {
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            } catch {
                let code = ((error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError)?.code ?? 0
                throw Self.failure(Int32(code), "cannot create directory \(directory)", default: .storageRejected)
            }
            made = true
            fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        }
        guard fd >= 0 else { throw Self.failure(errno, "cannot create a file in \(directory)") }
        sweeper.writing(into: directory, made: made)
        do throws(ImagePipeError) {
            try object.body.withUnsafeBytes { buffer in
                Result { () throws(ImagePipeError) in try Self.writeFully(fd, buffer, path: path) }
            }.get()
            if let origin = object.origin { try Self.mark(fd, origin, path: path) }
        } catch {
            close(fd)
            unlink(temporary)
            throw error
        }
        var placed = object
        placed.body = Data()
        return WrittenFile(
            fd: fd, temporary: temporary, path: path, directory: directory,
            object: placed, bytes: object.body.count)
    }

    /// Without durability: closes the file and moves it into place.
    private static func closeAndPlace(_ file: WrittenFile) throws(ImagePipeError) -> StoredObject {
        do throws(ImagePipeError) {
            if close(file.fd) != 0 { throw Self.failure(errno, "cannot close \(file.path)") }
            return try place(file)
        } catch {
            unlink(file.temporary)
            throw error
        }
    }

    /// Moves a written, closed file into place as its object's policy allows.
    static func place(_ file: WrittenFile) throws(ImagePipeError) -> StoredObject {
        let url = LocalPath.fileURL(file.path)
        if try place(file.temporary, at: file.path, file.object) {
            return StoredObject(key: file.object.key, url: url, bytes: file.bytes, wasInPlace: true)
        }
        return StoredObject(key: file.object.key, url: url, bytes: file.bytes)
    }

    /// Moves the finished temporary file to `path` as the object's policy allows; true when the
    /// same original's identical output was found there and kept (the temporary file is dropped).
    private static func place(_ temporary: String, at path: String, _ object: StorageObject) throws(ImagePipeError) -> Bool {
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
        if linkError == EEXIST || access(path, F_OK) == 0, try object.keepsObject(heldBy: origin(atPath: path)) {
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
        var directory = key[...]
        while let slash = directory.utf8.lastIndex(of: UInt8(ascii: "/")) {
            directory = directory[..<slash]
            guard rmdir(root + "/" + directory) == 0 else { break }
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

    /// Fsyncs an open file; the error number when that fails.
    static func syncFile(_ fd: Int32) -> Int32? {
        fsync(fd) == 0 ? nil : errno
    }

    /// Fsyncs a directory, so the names moved into it last; the error number when that fails.
    static func syncDirectory(_ path: String) -> Int32? {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return errno }
        defer { close(fd) }
        return fsync(fd) == 0 ? nil : errno
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
