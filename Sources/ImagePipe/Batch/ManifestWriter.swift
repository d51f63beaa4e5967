// Appends result records as JSON Lines, one complete line per job, flushed as each job finishes.
public import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Writes ``JobResult`` records as JSON Lines to a file or standard output.
public final class ManifestWriter: Sendable {
    private let handle: Mutex<FileHandle>
    private let ownsHandle: Bool
    private let sink: (@Sendable (Data) -> Void)?

    /// Writes to standard output through `sink`, which writes each line whole; the command line's
    /// console passes one that clears its progress line first when both go to the same terminal.
    public init(standardOutputThrough sink: @escaping @Sendable (Data) -> Void) {
        handle = Mutex(FileHandle.standardOutput)
        ownsHandle = false
        self.sink = sink
    }

    /// Opens `path` (standard output for `-`), takes an exclusive lock on it and only then empties
    /// it, so a second run given the same manifest is refused before it touches the first run's lines.
    ///
    /// - Throws: `configuration` when the file cannot be written, or another process (a batch still
    ///   running) holds its lock.
    public init(path: String) throws(ImagePipeError) {
        sink = nil
        if path == "-" {
            handle = Mutex(FileHandle.standardOutput)
            ownsHandle = false
            return
        }
        let absolute = LocalPath.absolute(path)
        let directory = LocalPath.parent(of: absolute)
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw .configuration("cannot create manifest directory \(directory): \(IOErrorText.reason(of: error))")
        }
        // Not O_TRUNC: the file is emptied only once its lock is held, so a refused run leaves it whole.
        let fd = open(absolute, O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw .configuration("cannot write manifest \(absolute): \(String(cString: strerror(errno)))")
        }
        // Two runs appending to one file through their own offsets overwrite each other's lines and
        // leave a broken file; the lock (released when the descriptor closes, also when the process
        // dies) makes the second one stop instead, at once and with the reason. Only a regular file
        // is locked and emptied: /dev/null or a pipe is shared by every run and cannot be emptied.
        var status = stat()
        let isRegular = fstat(fd, &status) == 0 && (status.st_mode & S_IFMT) == S_IFREG
        if isRegular, flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let error = errno
            Glibc.close(fd)
            throw .configuration(
                error == EWOULDBLOCK
                    ? "the manifest \(absolute) is being written by another imagepipe process; give this run its own --manifest, or wait for that one to end"
                    : "cannot lock the manifest \(absolute): \(String(cString: strerror(error)))")
        }
        guard !isRegular || ftruncate(fd, 0) == 0 else {
            let error = errno
            Glibc.close(fd)
            throw .configuration("cannot empty the manifest \(absolute): \(String(cString: strerror(error)))")
        }
        handle = Mutex(FileHandle(fileDescriptor: fd, closeOnDealloc: true))
        ownsHandle = true
    }

    /// Appends one record as a line.
    public func append(_ result: JobResult) {
        BlockingIO.mayBlock("a manifest append")
        let line = Data((result.jsonLine() + "\n").utf8)
        if let sink { return sink(line) }
        handle.withLock { $0.write(line) }
    }

    /// Flushes and closes the file.
    public func close() {
        BlockingIO.mayBlock("closing the manifest")
        handle.withLock { file in
            if ownsHandle {
                try? file.synchronize()
                try? file.close()
            }
        }
    }
}
