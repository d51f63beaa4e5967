// The one durable write: a temporary file written, fsynced, moved into place and its directory fsynced, for the local store and the queue directory alike.
import CFileSystem
public import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// File steps that survive a crash in the right order: a file's data is on disk before its name is,
/// and a name is on disk (its directory fsynced) before anything reports it written.
///
/// The local store runs the steps itself, sharing each round of fsyncs among many puts; the queue
/// directory writes its small records in one call (``write(_:to:stagingIn:failure:)``). Every step
/// blocks: callers run them on Dispatch queues (see ``BlockingIO``).
public enum DurableFile {
    /// How a failure's error number becomes an error: no space is `storageFull`; I/O and resource
    /// errors may pass (`storageUnavailable`); others take `fallback`.
    public static func failure(_ code: Int32, _ what: String, default fallback: ImagePipeError.Code) -> ImagePipeError {
        let reason = "\(what): \(String(cString: strerror(code)))"
        switch code {
        case ENOSPC, EDQUOT: return ImagePipeError(.storageFull, reason)
        case EIO, EAGAIN, EINTR, ENOMEM, EMFILE, ENFILE: return ImagePipeError(.storageUnavailable, reason)
        default: return ImagePipeError(fallback, reason)
        }
    }

    /// Creates `path` (which must not exist) for writing; the descriptor, or the error number.
    public static func create(_ path: String) -> Result<Int32, Errno> {
        BlockingIO.mayBlock("open \(path)")
        let fd = StallWatch.watch("creating \(path)") { open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644) }
        return fd >= 0 ? .success(fd) : .failure(Errno(errno))
    }

    /// Writes every byte of `buffer` to `fd`; the error number when that fails.
    public static func writeAll(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) -> Errno? {
        var offset = 0
        while offset < buffer.count {
            let written = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                return Errno(errno)
            }
            offset += written
        }
        return nil
    }

    /// Starts writing `fd`'s dirty pages back without waiting, so a round's first fsync finds the
    /// others' data already under way.
    public static func startWriteback(_ fd: Int32) {
        _ = ifs_start_writeback(fd)
    }

    /// Makes an open file's data durable; the error number when that fails. Where one `syncfs`
    /// commits the file system (``SyncRound``), the call joins the process's shared round: calls
    /// that arrive while a round runs share the next one's flush. Elsewhere it is an fsync.
    public static func sync(_ fd: Int32) -> Errno? {
        BlockingIO.mayBlock("fsync")
        return StallWatch.watch("an fsync") { inRound(.file(fd), descriptor: fd).map(Errno.init) }
    }

    /// Makes a directory's entries durable (the names moved into it last), as ``sync(_:)`` does a
    /// file; the error number when that fails.
    public static func syncDirectory(_ path: String) -> Errno? {
        BlockingIO.mayBlock("fsync \(path)")
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return Errno(errno) }
        defer { close(fd) }
        return StallWatch.watch("an fsync of \(path)") { inRound(.directory(path), descriptor: fd).map(Errno.init) }
    }

    /// Rounds shared by every caller that makes one thing durable at a time: the queue directory's
    /// records and moves, the notification outbox. One round runs at a time, on a queue of its own,
    /// taking at most as many items as a store may hold open for its round (a caller waits on
    /// each, so the rounds are bounded by the callers' own bounds too).
    private static let rounds: GroupCommitter<SyncRound.Item, Int32?> = {
        let queue = DispatchQueue(label: "imagepipe.durable-rounds", qos: .userInitiated)
        return GroupCommitter(maxBatch: Capacity.Limits.filesWaitingForDurability) { items, done in
            queue.async { done(SyncRound.sync(items)) }
        }
    }()

    private static func inRound(_ item: SyncRound.Item, descriptor fd: Int32) -> Int32? {
        guard SyncRound.mechanism(for: fd).0 != .fsync else { return fsync(fd) == 0 ? nil : errno }
        let outcome = Mutex<Int32??>(nil)
        let done = DispatchSemaphore(value: 0)
        rounds.submit(item) { result in
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return outcome.withLock { $0! }
    }

    /// What ``place(_:at:replacing:)`` did.
    public enum Placement: Sendable, Equatable {
        /// The file is under its name now.
        case placed
        /// Something is under the name already (or the file system cannot tell atomically): the
        /// file was left where it was, for the caller to decide.
        case taken
    }

    /// Moves `temporary` to `path`: replacing whatever is there, or only when nothing is (one
    /// atomic step where the file system has `RENAME_NOREPLACE`, a hard link elsewhere).
    public static func place(_ temporary: String, at path: String, replacing: Bool) -> Result<Placement, Errno> {
        BlockingIO.mayBlock("rename \(path)")
        return StallWatch.watch("moving a file to \(path)") { placing(temporary, at: path, replacing: replacing) }
    }

    private static func placing(_ temporary: String, at path: String, replacing: Bool) -> Result<Placement, Errno> {
        if replacing {
            return rename(temporary, path) == 0 ? .success(.placed) : .failure(Errno(errno))
        }
        if ifs_rename_noreplace(temporary, path) == 0 { return .success(.placed) }
        var code = errno
        if code == EINVAL || code == ENOSYS {
            if link(temporary, path) == 0 {
                unlink(temporary)
                return .success(.placed)
            }
            code = errno
        }
        // EEXIST: taken; the others: no hard links here, so the caller checks and renames.
        guard code == EEXIST || code == EPERM || code == EOPNOTSUPP || code == EMLINK else { return .failure(Errno(code)) }
        return .success(.taken)
    }

    /// Writes `data` to `path` whole or not at all, durably: a temporary file (in `staging` when
    /// given, else beside `path`) written, fsynced, renamed over `path`, its directory fsynced.
    ///
    /// A staging directory holds the temporary file when a crash mid-write must leave nothing in
    /// `path`'s directory (a claim area, removed with its worker); across file systems the file is
    /// written beside `path` instead.
    public static func write(
        _ data: Data, to path: String, stagingIn staging: String? = nil, failure fallback: ImagePipeError.Code = .storageUnavailable
    ) throws(ImagePipeError) {
        try makeParent(of: path, failure: fallback)
        let temporary = (staging ?? LocalPath.parent(of: path)) + "/.\(LocalPath.name(of: path)).\(UInt32.random(in: 0...UInt32.max)).tmp"
        let fd: Int32
        switch create(temporary) {
        case .success(let opened): fd = opened
        case .failure(let code): throw failure(code.rawValue, "cannot create \(temporary)", default: fallback)
        }
        let failed = data.withUnsafeBytes { writeAll(fd, $0) } ?? sync(fd)
        close(fd)
        if let failed {
            unlink(temporary)
            throw failure(failed.rawValue, "cannot write \(path)", default: fallback)
        }
        if case .failure(let code) = place(temporary, at: path, replacing: true) {
            unlink(temporary)
            if code.rawValue == EXDEV && staging != nil { return try write(data, to: path, failure: fallback) }
            throw failure(code.rawValue, "cannot write \(path)", default: fallback)
        }
        if let code = syncDirectory(LocalPath.parent(of: path)) {
            throw failure(code.rawValue, "cannot fsync the directory of \(path)", default: fallback)
        }
    }

    /// Creates the parent directories of `path`.
    public static func makeParent(of path: String, failure fallback: ImagePipeError.Code = .storageUnavailable) throws(ImagePipeError) {
        let parent = LocalPath.parent(of: path)
        BlockingIO.mayBlock("mkdir \(parent)")
        do {
            try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        } catch {
            let code = ((error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError)?.code ?? Int(EIO)
            throw failure(Int32(code), "cannot create \(parent)", default: fallback)
        }
    }

    /// An error number from a failed call.
    public struct Errno: Error, Sendable, Equatable {
        /// The number.
        public let rawValue: Int32
        /// Wraps `rawValue`.
        public init(_ rawValue: Int32) { self.rawValue = rawValue }
    }
}
