// Moving files within the queue without ever overwriting one, and writing small records atomically.
import Foundation
import ImagePipe
#if canImport(Glibc)
import Glibc
#endif

/// The queue's moves of originals: never overwriting a file, never losing one in a crash. Its
/// records are written through ``DurableFile``, as the local store's outputs are.
enum FileMoves {
    /// Moves `source` to `target` without replacing an existing file: when `target` is taken, a
    /// numbered name (`photo.1.jpg`) is used instead. Returns the path used.
    ///
    /// One step that never replaces (``DurableFile/place(_:at:replacing:)``: `RENAME_NOREPLACE`, or
    /// a hard link then an unlink where the file system lacks it): a crash leaves the file under
    /// one name or, between link and unlink, both; never under none. A move found half done that
    /// way is finished under the name it had reached.
    @discardableResult
    static func moveKeepingBoth(_ source: String, to target: String) throws(ImagePipeError) -> String {
        try DurableFile.makeParent(of: target)
        var candidate = target
        var number = 0
        while true {
            switch DurableFile.place(source, at: candidate, replacing: false) {
            case .success(.placed):
                return candidate
            case .success(.taken) where sameFile(source, candidate):
                // An earlier move of this very file stopped between link and unlink (a crash).
                if unlink(source) != 0 && errno != ENOENT { throw failure("cannot remove \(source)") }
                return candidate
            case .success(.taken) where exists(candidate):
                number += 1
                candidate = numbered(target, number)
            case .success(.taken):
                // No hard links here (some network file systems): a checked rename.
                if rename(source, candidate) != 0 { throw failure("cannot move \(source) to \(candidate)") }
                return candidate
            case .failure(let code):
                errno = code.rawValue
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

    /// Removes the directories between `root` and `relative` (a file's path under it) that are empty,
    /// deepest first: what a file leaving them left behind.
    static func removeEmptyParents(of relative: String, under root: String) {
        var parts = relative.split(separator: "/").dropLast()
        while !parts.isEmpty, rmdir(root + "/" + parts.joined(separator: "/")) == 0 {
            parts = parts.dropLast()
        }
    }

    static func failure(_ what: String) -> ImagePipeError {
        ImagePipeError(.storageUnavailable, "\(what): \(String(cString: strerror(errno)))")
    }
}
