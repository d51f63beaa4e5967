// The embedded default storage: files under a directory, written atomically and durably, each marked with its original.
import CFileSystem
import Foundation
public import ImagePipe
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
/// fsyncs (group commit, see ``GroupCommitter``): under load each round of syncs covers many files,
/// run one at a time on the store's own Dispatch queue. How many files wait for a round is bounded
/// by the pipeline's hold limit (``Capacity``), not here.
/// A new key's move fails when the name is taken (`renameat2` with `RENAME_NOREPLACE`, or a hard
/// link where that is not supported): the check against replacing another original's file is
/// atomic, even between several workers. A temporary file a killed run left behind is removed by a
/// later run once it is an hour old (see ``TemporarySweeper``).
public struct LocalDirectoryStorage: StorageRepository {
    /// The extended attribute holding each file's origin.
    public static let originAttribute = "user.imagepipe.origin"

    /// The absolute root directory.
    public let root: String
    /// Where a web server or CDN serves the root (`--public-base-url`): the URLs recorded are then
    /// this base and the key, encoded as for a bucket; nil records `file://` URLs.
    public let publicBaseURL: String?
    /// Whether to fsync files and directories (on by default; off trades crash durability for speed).
    public let durable: Bool
    /// Makes the puts' files durable in shared rounds; shared by copies of the storage.
    private let commits: GroupCommitter<WrittenFile, Result<StoredObject, ImagePipeError>>
    /// Removes the temporary files killed runs left in the directories written to.
    let sweeper = TemporarySweeper()

    /// Creates the storage; nothing is created on disk before ``probe()`` or the first put.
    public init(root: String, durable: Bool = true, publicBaseURL: String? = nil) {
        self.root = LocalPath.absolute(root)
        self.durable = durable
        self.publicBaseURL = publicBaseURL
        let root = self.root
        let rounds = DispatchQueue(label: "imagepipe.local-commit", qos: .userInitiated)
        self.commits = GroupCommitter { files, done in
            rounds.async { done(Self.commit(files, root: root)) }
        }
    }

    public var location: String { root }

    /// The URL recorded for the file under `key`: behind ``publicBaseURL`` when the folder is
    /// served, else the file's own `file://` URL.
    public func url(forKey key: String) -> String {
        guard let publicBaseURL else { return LocalPath.fileURL(root + "/" + key) }
        return PercentEncoding.url(base: publicBaseURL, key: key)
    }

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
        let written: WrittenFile
        do {
            written = try writeTemporary(object)
        } catch {
            return completion(.failure(error))
        }
        guard durable else {
            return completion(Result { () throws(ImagePipeError) in try Self.closeAndPlace(written) })
        }
        commits.submit(written, completion: completion)
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
        var created = DurableFile.create(temporary)
        var made = false
        for _ in 0..<3 {
            guard case .failure(let code) = created, code.rawValue == ENOENT else { break }
            try DurableFile.makeParent(of: temporary, failure: .storageRejected)
            made = true
            created = DurableFile.create(temporary)
        }
        let fd: Int32
        switch created {
        case .success(let opened): fd = opened
        case .failure(let code): throw Self.failure(code.rawValue, "cannot create a file in \(directory)")
        }
        sweeper.writing(into: directory, made: made)
        do throws(ImagePipeError) {
            if let code = object.body.withUnsafeBytes({ DurableFile.writeAll(fd, $0) }) {
                throw Self.failure(code.rawValue, "cannot write \(path)")
            }
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
            object: placed, bytes: object.body.count, url: url(forKey: object.key))
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
        if try place(file.temporary, at: file.path, file.object) {
            return StoredObject(key: file.object.key, url: file.url, bytes: file.bytes, wasInPlace: true)
        }
        return StoredObject(key: file.object.key, url: file.url, bytes: file.bytes)
    }

    /// Moves the finished temporary file to `path` as the object's policy allows; true when the
    /// same original's identical output was found there and kept (the temporary file is dropped).
    private static func place(_ temporary: String, at path: String, _ object: StorageObject) throws(ImagePipeError) -> Bool {
        let replacing = object.origin == nil || object.policy == .replaceAny
        switch DurableFile.place(temporary, at: path, replacing: replacing) {
        case .success(.placed):
            return false
        case .failure(let code):
            throw Self.failure(code.rawValue, replacing ? "cannot rename into \(path)" : "cannot move a finished file into \(path)")
        case .success(.taken):
            // Taken (or no hard links on this file system: then the check below is not atomic).
            if access(path, F_OK) == 0, try object.keepsObject(heldBy: origin(atPath: path)) {
                unlink(temporary)
                return true
            }
            if case .failure(let code) = DurableFile.place(temporary, at: path, replacing: true) {
                throw Self.failure(code.rawValue, "cannot rename into \(path)")
            }
            return false
        }
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
            url: url(forKey: key))
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

    /// The most bytes of origin read back: an extended attribute on ext4 holds 4 KiB or so with its name.
    static let originLimit = 4096

    /// The origin recorded on the file at `path`, if any.
    public static func origin(atPath path: String) -> Origin? {
        var buffer = [UInt8](repeating: 0, count: originLimit)
        let count = lgetxattr(path, originAttribute, &buffer, buffer.count)
        guard count > 0 else { return nil }
        return try? JSONDecoder().decode(Origin.self, from: Data(buffer[..<count]))
    }

    private static func mark(_ fd: Int32, _ origin: Origin, path: String) throws(ImagePipeError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding plain values cannot fail.
        let json = try! encoder.encode(origin)
        var status = json.count > originLimit ? -1 : json.withUnsafeBytes { fsetxattr(fd, originAttribute, $0.baseAddress, $0.count, 0) }
        // The facts are the part a re-run can do without: an origin too long to be read back whole,
        // or for the file system to hold (a very long name), is recorded without them rather than
        // failing the output.
        if status != 0, json.count > originLimit || [ENOSPC, E2BIG, ERANGE].contains(errno), origin.image?.facts != nil {
            var shorter = origin
            shorter.image?.facts = nil
            let json = try! encoder.encode(shorter)
            status = json.withUnsafeBytes { fsetxattr(fd, originAttribute, $0.baseAddress, $0.count, 0) }
        }
        if status != 0 { throw failure(errno, "cannot record the original of \(path) in \(originAttribute)", default: .storageRejected) }
    }

    /// Unique within the machine: the process and a counter, plus one random draw per process (a
    /// pid can be reused). A getrandom call per file was a measurable cost on small images.
    private static func randomSuffix() -> String {
        "\(processTag)-\(String(suffixCounter.add(1, ordering: .relaxed).newValue, radix: 16))"
    }

    private static let processTag = "\(getpid())\(String(UInt32.random(in: 0...UInt32.max), radix: 36))"
    private static let suffixCounter = Atomic<UInt64>(0)

    /// A failed call's error: permission and path errors will not pass (`storageRejected`).
    static func failure(_ code: Int32, _ what: String, default fallback: ImagePipeError.Code = .storageRejected) -> ImagePipeError {
        DurableFile.failure(code, what, default: fallback)
    }
}
