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
        var number = 0
        while true {
            let candidate = number == 0 ? target : numbered(target, number)
            if try place(source, at: candidate) { return candidate }
            number += 1
        }
    }

    /// Moves a job's original to `target` as ``moveKeepingBoth(_:to:)`` does, and its options file
    /// (at `options`, when there is one) to the same name with ``JobOptionsFile/suffix``: both are
    /// numbered alike when either name is taken, so they stay a pair.
    ///
    /// The options file moves first. A crash between the two leaves the original where it was and
    /// its options already at the name it goes to: the next move of the original alone
    /// (``moveKeepingBoth(_:to:)``) finds that name free and lands beside them again. Should the
    /// original's name be taken just after its options were placed (a producer delivering that name
    /// at that moment), the options go on with it to the next free name.
    @discardableResult
    static func moveJobKeepingBoth(_ source: String, options: String, to target: String) throws(ImagePipeError) -> String {
        guard exists(options) else { return try moveKeepingBoth(source, to: target) }
        try DurableFile.makeParent(of: target)
        var optionsAt = options
        var number = 0
        while true {
            let candidate = number == 0 ? target : numbered(target, number)
            let candidateOptions = JobOptionsFile.name(of: candidate)
            let taken = { (file: String, name: String) in file != name && exists(name) && !sameFile(file, name) }
            if taken(source, candidate) || taken(optionsAt, candidateOptions) {
                number += 1
                continue
            }
            if optionsAt != candidateOptions {
                guard try place(optionsAt, at: candidateOptions) else {
                    number += 1
                    continue
                }
                optionsAt = candidateOptions
            }
            if try place(source, at: candidate) { return candidate }
            number += 1
        }
    }

    /// Moves `source` to exactly `target` unless another file is there: true when it is there now
    /// (a move of this very file found half done is finished), false when `target` is taken.
    private static func place(_ source: String, at target: String) throws(ImagePipeError) -> Bool {
        switch DurableFile.place(source, at: target, replacing: false) {
        case .success(.placed):
            return true
        case .success(.taken) where sameFile(source, target):
            // An earlier move of this very file stopped between link and unlink (a crash).
            if unlink(source) != 0 && errno != ENOENT { throw failure("cannot remove \(source)") }
            return true
        case .success(.taken) where exists(target):
            return false
        case .success(.taken):
            // No hard links here (some network file systems): a checked rename.
            BlockingIO.mayBlock("rename \(source)")
            if rename(source, target) != 0 { throw failure("cannot move \(source) to \(target)") }
            return true
        case .failure(let code):
            errno = code.rawValue
            throw failure("cannot move \(source) to \(target)")
        }
    }

    /// Puts the file at `source` also at `target`, replacing what is there (a copy an earlier,
    /// interrupted try of the same step left): a hard link where the file system has them, a copy of
    /// its bytes where it has not. `source` stays. The link is made in `staging` and renamed into
    /// place, so `target` is never a half-written file; `target`'s directory is not fsynced (the
    /// caller's next write there does it).
    static func keepCopy(_ source: String, at target: String, staging: String) throws(ImagePipeError) {
        BlockingIO.mayBlock("keep a copy of \(source)")
        try DurableFile.makeParent(of: target)
        let temporary = staging + "/.\(LocalPath.name(of: target)).\(UInt32.random(in: 0...UInt32.max)).tmp"
        if link(source, temporary) == 0 {
            // Renaming a link of the file onto itself changes nothing and leaves the temporary name.
            defer { unlink(temporary) }
            if rename(temporary, target) == 0 { return }
            guard errno == EXDEV else { throw failure("cannot place \(target)") }
        } else if !(errno == EPERM || errno == EOPNOTSUPP || errno == EMLINK || errno == EXDEV) {
            throw failure("cannot link \(source)")
        }
        // A copy: only a regular file has bytes worth keeping (an options file that is a FIFO or a
        // link was refused when it was read, and holds no options).
        guard let data = regularFileContents(source) else { return }
        try DurableFile.write(data, to: target, stagingIn: staging)
    }

    /// The bytes of the regular file at `path` (a link not followed), or nil when it is something else.
    private static func regularFileContents(_ path: String) -> Data? {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        return try? handle.readToEnd() ?? Data()
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
