// One round of durability for many files and directories: one syncfs per file system where that commits everything at once, fsyncs elsewhere, and each item's error its own.
import CFileSystem
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Makes a round's open files and directories durable at the cost of one flush per file system.
///
/// Fsyncs issued one after another each wait for a journal commit and a cache flush of their own
/// on a disk another process writes to (docs/performance.md, "Rounds of fsyncs"). On ext4 and XFS
/// one `syncfs` commits every file's data, inode and directory entry at once, so a round makes all
/// its items durable with it, then finds out which item failed:
/// - `syncfs` succeeded: each file's own write-back error (which it reports only once, to the
///   first caller that asks through that descriptor) is read with a wait on its write-back
///   (``Calls/waitWriteback``), so a file whose pages failed to reach the disk fails alone.
/// - `syncfs` failed: since Linux 5.8 it reports a write-back error of any file on the file system
///   (its superblock's error sequence), another process's too, so the error may be nobody's in
///   the round. Each item is then fsynced on its own, and fails by its own fsync's error only.
///
/// Elsewhere (tmpfs, network and FUSE file systems, whose `syncfs` may commit less or cost more)
/// each item is fsynced, as `IMAGEPIPE_DURABILITY_FLUSH=fsync` asks everywhere;
/// `IMAGEPIPE_DURABILITY_FLUSH=syncfs` uses `syncfs` on any file system (the tests' strace runs), and
/// `=together` fsyncs a round's items all at once (``Mechanism/together``): beside a writing
/// neighbour `syncfs` waits for its dirty pages too, which fsyncs do not (docs/performance.md).
/// Every call blocks (see ``BlockingIO``).
public enum SyncRound {
    /// How a round makes a file system's items durable.
    public enum Mechanism: String, Sendable, Equatable {
        /// Each item fsynced, one after another.
        case fsync
        /// One `syncfs` for all of them, then each file's write-back error read.
        case syncfs
        /// Each item fsynced, all at once from threads of the round's own, so the journal joins
        /// their commits; no other process's dirty pages are waited for.
        case together
    }

    /// An item of a round.
    public enum Item: Sendable, Equatable {
        /// A file open for writing, whose data and inode must be durable.
        case file(Int32)
        /// A directory, whose entries must be durable.
        case directory(String)
    }

    /// The system calls a round makes, each returning nil or the error number; tests replace them.
    public struct Calls: Sendable {
        /// Fsyncs one descriptor.
        public var fsync: @Sendable (Int32) -> Int32?
        /// Commits the file system holding the descriptor.
        public var syncfs: @Sendable (Int32) -> Int32?
        /// Waits for the descriptor's write-back and reads its error.
        public var waitWriteback: @Sendable (Int32) -> Int32?
        /// The mechanism for the file system holding the descriptor, and that file system's device.
        public var mechanism: @Sendable (Int32) -> (Mechanism, device: UInt64)

        public init(
            fsync: @escaping @Sendable (Int32) -> Int32?, syncfs: @escaping @Sendable (Int32) -> Int32?,
            waitWriteback: @escaping @Sendable (Int32) -> Int32?, mechanism: @escaping @Sendable (Int32) -> (Mechanism, device: UInt64)
        ) {
            self.fsync = fsync
            self.syncfs = syncfs
            self.waitWriteback = waitWriteback
            self.mechanism = mechanism
        }

        /// The real calls.
        public static let system = Calls(
            fsync: { Glibc.fsync($0) == 0 ? nil : errno }, syncfs: { ifs_syncfs($0) == 0 ? nil : errno },
            waitWriteback: { ifs_wait_writeback($0) == 0 ? nil : errno }, mechanism: SyncRound.mechanism(for:))
    }

    /// Makes every item durable; one outcome per item, in order: nil, or the error number of the
    /// call that failed it.
    public static func sync(_ items: [Item], calls: Calls = .system) -> [Int32?] {
        guard !items.isEmpty else { return [] }
        BlockingIO.mayBlock("a round of \(items.count) syncs")
        return StallWatch.watch("a round of \(items.count) syncs") { syncing(items, calls: calls) }
    }

    private static func syncing(_ items: [Item], calls: Calls) -> [Int32?] {
        var outcomes = [Int32?](repeating: nil, count: items.count)
        // A directory is opened to be synced; one that cannot be fails alone.
        var descriptors = [Int32](repeating: -1, count: items.count)
        defer {
            for (index, item) in items.enumerated() where descriptors[index] >= 0 {
                if case .directory = item { close(descriptors[index]) }
            }
        }
        // The items of each file system whose round is one syncfs, in order of first appearance.
        var shared: [(device: UInt64, indices: [Int])] = []
        var together: [Int] = []
        for (index, item) in items.enumerated() {
            switch item {
            case .file(let fd):
                descriptors[index] = fd
            case .directory(let path):
                let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
                guard fd >= 0 else {
                    outcomes[index] = errno
                    continue
                }
                descriptors[index] = fd
            }
            let (mechanism, device) = calls.mechanism(descriptors[index])
            if mechanism == .together {
                together.append(index)
                continue
            }
            guard mechanism == .syncfs else {
                outcomes[index] = calls.fsync(descriptors[index])
                continue
            }
            if let group = shared.firstIndex(where: { $0.device == device }) {
                shared[group].indices.append(index)
            } else {
                shared.append((device, [index]))
            }
        }
        for (_, indices) in shared {
            if calls.syncfs(descriptors[indices[0]]) == nil {
                // Committed; a file's pages that failed to be written are its own error. A
                // directory's entries are metadata, committed with the journal.
                for index in indices {
                    if case .file(let fd) = items[index] { outcomes[index] = calls.waitWriteback(fd) }
                }
            } else {
                // Perhaps another file's error, perhaps the journal's: each item's own fsync tells.
                for index in indices { outcomes[index] = calls.fsync(descriptors[index]) }
            }
        }
        if !together.isEmpty {
            let fsyncs = concurrently(together.map { descriptors[$0] }, calls.fsync)
            for (index, outcome) in zip(together, fsyncs) { outcomes[index] = outcome }
        }
        return outcomes
    }

    /// Runs `call` on every descriptor from up to `width` threads at once; the outcomes in order.
    static func concurrently(_ fds: [Int32], width: Int = 32, _ call: @escaping @Sendable (Int32) -> Int32?) -> [Int32?] {
        guard fds.count > 1 else { return fds.map(call) }
        let shared = Shared(count: fds.count)
        let finished = DispatchGroup()
        for _ in 0..<min(width, fds.count) {
            finished.enter()
            Thread {
                while true {
                    let index = shared.next.add(1, ordering: .relaxed).oldValue
                    guard index < fds.count else { break }
                    let outcome = call(fds[index])
                    shared.outcomes.withLock { $0[index] = outcome }
                }
                finished.leave()
            }.start()
        }
        finished.wait()
        return shared.outcomes.withLock { $0 }
    }

    /// What the threads of ``concurrently(_:width:_:)`` share.
    private final class Shared: Sendable {
        let next = Atomic<Int>(0)
        let outcomes: Mutex<[Int32?]>
        init(count: Int) { outcomes = Mutex(Array(repeating: nil, count: count)) }
    }

    /// The mechanism `IMAGEPIPE_DURABILITY_FLUSH` asks for, if any.
    static let forced: Mechanism? = ProcessInfo.processInfo.environment["IMAGEPIPE_DURABILITY_FLUSH"].flatMap(Mechanism.init(rawValue:))

    /// File systems whose `syncfs` commits every file's data and metadata in one journal commit:
    /// ext2/3/4 (all one magic number; without a journal it writes every dirty block and flushes
    /// the device) and XFS (a forced log).
    private static let committingFileSystems: Set<Int64> = [0xEF53, 0x5846_5342]

    /// `syncfs` on the file systems that commit everything with it, fsync elsewhere (unless forced).
    @Sendable public static func mechanism(for fd: Int32) -> (Mechanism, device: UInt64) {
        var device: UInt64 = 0
        var type: Int64 = 0
        guard ifs_file_system(fd, &device, &type) == 0 else { return (.fsync, 0) }
        if let forced { return (forced, device) }
        return (committingFileSystems.contains(type) ? .syncfs : .fsync, device)
    }
}
