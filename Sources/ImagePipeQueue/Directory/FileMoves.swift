// Moving files within the queue without ever overwriting one, and writing small records atomically.
import Foundation
import ImagePipe
#if canImport(Glibc)
import Glibc
#endif

/// File operations the queue is built from.
enum FileMoves {
    /// Moves `source` to `target` without replacing an existing file: when `target` is taken, a
    /// numbered name (`photo.1.jpg`) is used instead. Returns the path used.
    ///
    /// Hard link then unlink: a crash in between leaves the file under both names, never under none.
    @discardableResult
    static func moveKeepingBoth(_ source: String, to target: String) throws(ImagePipeError) -> String {
        try makeParent(of: target)
        var candidate = target
        var number = 0
        while true {
            if link(source, candidate) == 0 {
                if unlink(source) != 0 && errno != ENOENT { throw failure("cannot remove \(source)") }
                return candidate
            }
            switch errno {
            case EEXIST:
                if sameFile(source, candidate) {
                    // An earlier move of this very file stopped between link and unlink (a crash).
                    if unlink(source) != 0 && errno != ENOENT { throw failure("cannot remove \(source)") }
                    return candidate
                }
                number += 1
                candidate = numbered(target, number)
            case EPERM, EXDEV, EOPNOTSUPP, EMLINK:
                // No hard links here (some network filesystems): fall back to a checked rename.
                while exists(candidate) {
                    number += 1
                    candidate = numbered(target, number)
                }
                if rename(source, candidate) != 0 { throw failure("cannot move \(source) to \(candidate)") }
                return candidate
            default:
                throw failure("cannot move \(source) to \(candidate)")
            }
        }
    }

    /// Whether anything (a link too, even a dangling one) is at `path`.
    static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    /// Whether two paths name the same file, one a hard link of the other.
    static func sameFile(_ first: String, _ second: String) -> Bool {
        var a = stat(), b = stat()
        return lstat(first, &a) == 0 && lstat(second, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino
    }

    /// `dir/name.ext` → `dir/name.N.ext`.
    static func numbered(_ path: String, _ number: Int) -> String {
        let slash = path.lastIndex(of: "/").map { path.index(after: $0) } ?? path.startIndex
        if let dot = path[slash...].lastIndex(of: "."), dot != slash {
            return "\(path[..<dot]).\(number)\(path[dot...])"
        }
        return "\(path).\(number)"
    }

    /// Creates the parent directories of `path`.
    static func makeParent(of path: String) throws(ImagePipeError) {
        let parent = LocalPath.parent(of: path)
        do {
            try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        } catch {
            throw ImagePipeError(.storageUnavailable, "cannot create \(parent): \(IOErrorText.reason(of: error))")
        }
    }

    /// Writes `data` to `path` through a temporary file, fsync and rename.
    ///
    /// The temporary file goes in `staging` when given (a claim area, removed with its worker, so a
    /// crash mid-write leaves nothing behind in `done/`), else beside `path`.
    static func writeAtomically(_ data: Data, to path: String, stagingIn staging: String? = nil) throws(ImagePipeError) {
        try makeParent(of: path)
        let temporary =
            (staging ?? LocalPath.parent(of: path))
            + "/.\(LocalPath.name(of: path)).\(UInt32.random(in: 0...UInt32.max)).tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw failure("cannot create \(temporary)") }
        let written = data.withUnsafeBytes { buffer -> Bool in
            var offset = 0
            while offset < buffer.count {
                let n = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if n < 0 { if errno == EINTR { continue } else { return false } }
                offset += n
            }
            return true
        }
        let synced = written && fsync(fd) == 0
        close(fd)
        guard synced, rename(temporary, path) == 0 else {
            let crossDevice = synced && errno == EXDEV
            let error = failure("cannot write \(path)")
            unlink(temporary)
            if crossDevice && staging != nil { return try writeAtomically(data, to: path) }
            throw error
        }
    }

    /// Removes the directories between `root` and `relative` (a file's path under it) that are empty,
    /// deepest first: what a file leaving them left behind.
    static func removeEmptyParents(of relative: String, under root: String) {
        var parts = relative.split(separator: "/").dropLast()
        while !parts.isEmpty, rmdir(root + "/" + parts.joined(separator: "/")) == 0 {
            parts = parts.dropLast()
        }
    }

    /// Flushes a directory's entries (renames and links into it) to disk.
    static func syncDirectory(_ path: String) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        close(fd)
    }

    static func failure(_ what: String) -> ImagePipeError {
        ImagePipeError(.storageUnavailable, "\(what): \(String(cString: strerror(errno)))")
    }
}
