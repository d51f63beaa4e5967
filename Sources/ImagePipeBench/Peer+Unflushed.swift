// imagepipe with its flushes made no-ops: what durability costs, measured beside the durable runs.
import Foundation

extension Peer {
    /// A preloaded library in which `fsync`, `fdatasync`, `syncfs` and `sync_file_range` return at
    /// once: every write, rename and directory entry is made as usual, none is waited for. The bench
    /// compiles it into its work folder and preloads it into that row's runs alone: a worker that
    /// does not flush gives no guarantee, so nothing else ever uses it.
    static let unflushedSource = """
        #define _GNU_SOURCE
        #include <fcntl.h>
        #include <unistd.h>
        int fsync(int fd) { (void) fd; return 0; }
        int fdatasync(int fd) { (void) fd; return 0; }
        int syncfs(int fd) { (void) fd; return 0; }
        int sync_file_range(int fd, off64_t offset, off64_t count, unsigned int flags) {
            (void) fd; (void) offset; (void) count; (void) flags; return 0;
        }

        """

    /// The row's name in the table.
    static let unflushedName = "imagepipe, no flushes"

    /// Compiles ``unflushedSource`` into `scriptDirectory` as `unflushed.so`; its path, or nil
    /// when there is no C compiler.
    static func compileUnflushed(scriptDirectory: String) -> String? {
        let source = scriptDirectory + "/unflushed.c", library = scriptDirectory + "/unflushed.so"
        guard (try? unflushedSource.write(toFile: source, atomically: true, encoding: .utf8)) != nil else { return nil }
        let compile = "$(command -v cc || command -v clang) -O2 -shared -fPIC \"$0\" -o \"$1\""
        return ProcessRunner.capture(["sh", "-c", compile, source, library]) != nil ? library : nil
    }

    /// imagepipe's `batch` into a local folder, like the first row, with ``unflushedSource``
    /// preloaded: beside the durable row, the share of its time that is waiting for the disk's
    /// flushes, and what is the disk's (or a neighbour's) anyway.
    static func imagepipeUnflushed(
        executable: String, job: BenchJob, scriptDirectory: String, manifest: @escaping @Sendable (String) -> String
    )
        -> Peer
    {
        var peer = imagepipe(executable: executable, job: job, destination: nil, label: unflushedName, manifest: manifest)
        peer.scoredCommand = nil
        if let library = compileUnflushed(scriptDirectory: scriptDirectory) {
            // Beside what is preloaded already (an allocator), so the row differs by its flushes alone.
            let preloaded = ProcessInfo.processInfo.environment["LD_PRELOAD"].map { $0.isEmpty ? "" : " " + $0 } ?? ""
            peer.environment["LD_PRELOAD"] = library + preloaded
        } else {
            peer.unavailable = "cannot compile the no-flush library with cc or clang (is a C compiler installed?)"
        }
        return peer
    }
}
