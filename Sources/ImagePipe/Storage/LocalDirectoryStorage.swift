// The embedded default storage: files under a directory, written atomically and durably.
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Stores objects as files under a root directory.
///
/// Each put writes a temporary file beside the target, fsyncs it, renames it over the target and
/// fsyncs the directory, so a reader never sees a half-written file and a crash never leaves one
/// behind under the final name.
public struct LocalDirectoryStorage: StorageRepository {
    /// The absolute root directory.
    public let root: String
    /// Whether to fsync files and directories (on by default; off trades crash durability for speed).
    public let durable: Bool

    /// Creates the storage, making the root directory when it is missing.
    public init(root: String, durable: Bool = true) throws(ImagePipeError) {
        let absolute = FilePath.absolute(root)
        do {
            try FileManager.default.createDirectory(atPath: absolute, withIntermediateDirectories: true)
        } catch {
            throw .configuration("cannot create destination directory \(absolute): \(FilePath.reason(of: error))")
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: absolute, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw .configuration("destination \(absolute) is not a directory")
        }
        self.root = absolute
        self.durable = durable
    }

    public var location: String { root }

    public func put(_ object: StorageObject) throws(ImagePipeError) -> StoredObject {
        try KeyTemplate.validate(key: object.key)
        let path = root + "/" + object.key
        let directory = String(path[..<path.lastIndex(of: "/")!])
        let name = String(path[path.index(after: path.lastIndex(of: "/")!)...])
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw ImagePipeError(.storageRejected, "cannot create directory \(directory): \(FilePath.reason(of: error))")
        }

        let temporary = directory + "/.\(name).\(UInt32.random(in: 0...UInt32.max)).tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw Self.failure(errno, "cannot create \(temporary)") }
        var closed = false
        defer {
            if !closed { close(fd) }
        }
        do throws(ImagePipeError) {
            try object.body.withUnsafeBytes { buffer in
                Result { () throws(ImagePipeError) in try Self.writeFully(fd, buffer, path: path) }
            }.get()
            if durable && fsync(fd) != 0 { throw Self.failure(errno, "cannot fsync \(path)") }
            closed = true
            if close(fd) != 0 { throw Self.failure(errno, "cannot close \(path)") }
            if rename(temporary, path) != 0 { throw Self.failure(errno, "cannot rename into \(path)") }
        } catch {
            unlink(temporary)
            throw error
        }
        if durable { Self.syncDirectory(directory) }
        return StoredObject(key: object.key, url: FilePath.fileURL(path), bytes: object.body.count)
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

    /// Disk full, quota and I/O errors may pass; permission and path errors will not.
    static func failure(_ code: Int32, _ what: String) -> ImagePipeError {
        let transient: Set<Int32> = [ENOSPC, EDQUOT, EIO, EAGAIN, EINTR, ENOMEM, EMFILE, ENFILE]
        let reason = "\(what): \(String(cString: strerror(code)))"
        return ImagePipeError(transient.contains(code) ? .storageUnavailable : .storageRejected, reason)
    }
}
