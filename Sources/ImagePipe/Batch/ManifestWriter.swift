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

    /// Opens (and truncates) `path`, or standard output for `-`.
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
        let fd = open(absolute, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw .configuration("cannot write manifest \(absolute): \(String(cString: strerror(errno)))")
        }
        handle = Mutex(FileHandle(fileDescriptor: fd, closeOnDealloc: true))
        ownsHandle = true
    }

    /// Appends one record as a line.
    public func append(_ result: JobResult) {
        let line = Data((result.jsonLine() + "\n").utf8)
        if let sink { return sink(line) }
        handle.withLock { $0.write(line) }
    }

    /// Flushes and closes the file.
    public func close() {
        handle.withLock { file in
            if ownsHandle {
                try? file.synchronize()
                try? file.close()
            }
        }
    }
}
