// A process's worth of writing beside the benchmark: what a worker's disk seldom lacks (a database, logs, other services).
import Foundation
import Synchronization

/// Writes to a file in the bench's work folder for as long as it runs: 4 MB at a time, an fsync
/// every 32 MB, the file cut back to nothing at 512 MB. Flushes then wait behind its data, as they
/// do on a disk shared with other writers (docs/performance.md, "One flush per round"). It runs on
/// a thread of the bench process, so its CPU time is no tool's; the tools' runs are timed beside it.
public final class NeighbourWriter: Sendable {
    /// What it has done so far.
    public struct Tally: Sendable, Codable, Equatable {
        /// Bytes written.
        public var bytes = 0
        /// fsyncs of the file.
        public var fsyncs = 0
        /// Why it stopped early, if it did (a full disk): the runs beside it were then partly alone.
        public var failure: String?

        enum CodingKeys: String, CodingKey { case bytes, fsyncs, failure }
    }

    public static let blockBytes = 4 << 20
    public static let syncEvery = 32 << 20
    public static let cutAt = 512 << 20

    private let path: String
    private let state = Mutex<(stop: Bool, tally: Tally)>((false, Tally()))
    private let finished = DispatchSemaphore(value: 0)

    /// Starts writing to `directory`/neighbour.dat.
    public init(directory: String) {
        path = directory + "/neighbour.dat"
        let thread = Thread { [self] in
            write()
            finished.signal()
        }
        thread.name = "imagepipe.bench-neighbour"
        thread.start()
    }

    /// What it has written so far.
    public var tally: Tally { state.withLock { $0.tally } }

    /// Stops it, removes its file and returns what it wrote.
    @discardableResult
    public func stop() -> Tally {
        state.withLock { $0.stop = true }
        finished.wait()
        unlink(path)
        return tally
    }

    private func write() {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            let reason = String(cString: strerror(errno))
            state.withLock { $0.tally.failure = "cannot create \(path): \(reason)" }
            return
        }
        defer { close(fd) }
        // Not zeros: a file system that compresses or dedupes would write next to nothing.
        var block = [UInt8](repeating: 0, count: Self.blockBytes)
        var generator = SystemRandomNumberGenerator()
        block.withUnsafeMutableBytes { raw in
            for index in stride(from: 0, to: raw.count - 7, by: 8) {
                raw.storeBytes(of: generator.next() as UInt64, toByteOffset: index, as: UInt64.self)
            }
        }
        var offset = 0
        // One block at least, however short the runs: a neighbour that wrote nothing was not there.
        repeat {
            let written = block.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, off_t(offset)) }
            guard written == block.count else {
                let reason = written < 0 ? String(cString: strerror(errno)) : "a short write"
                state.withLock { $0.tally.failure = "writing \(path): \(reason)" }
                return
            }
            offset += written
            state.withLock { $0.tally.bytes += written }
            if offset % Self.syncEvery == 0 {
                fsync(fd)
                state.withLock { $0.tally.fsyncs += 1 }
            }
            if offset >= Self.cutAt {
                _ = ftruncate(fd, 0)
                offset = 0
            }
        } while !state.withLock({ $0.stop })
    }
}
