// Removes the temporary files killed runs left in the local storage's directories, once each directory per process.
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Finds `.imagepipe-*.tmp` files that no put will finish and removes them.
///
/// A put's temporary file lives beside its target for one round of fsyncs, seconds at most. One
/// whose writer was killed stays: a hidden file the size of an output, at most a round's worth per
/// kill. Whether its writer is gone cannot be asked of another machine sharing the directory, so
/// age decides: a temporary file not written to for ``staleAfter`` is no live put's. The first put
/// into each directory in a process looks it through (one listing; nothing when the put made the
/// directory itself). A writer stopped for longer than that (SIGSTOP) only loses its put, which
/// fails and is tried again; nothing under a final name is touched.
final class TemporarySweeper: Sendable {
    /// How a put's temporary file is named: these around a suffix unique to the put.
    static let prefix = ".imagepipe-", suffix = ".tmp"
    /// How long a temporary file must have gone unwritten to count as left behind.
    static let staleAfter: TimeInterval = 3600
    /// Directories remembered as looked through; past this the memory starts over (looking through a
    /// directory again costs one listing).
    static let rememberedLimit = 100_000

    private let seen = Mutex<Set<String>>([])
    private let removedCount = Atomic<Int>(0)

    /// Temporary files removed so far.
    var removed: Int { removedCount.load(ordering: .relaxed) }

    /// Called by a put about to write into `directory`: the first time, it is looked through, unless
    /// the put has just made it (`made`), when nothing can be in it yet.
    func writing(into directory: String, made: Bool) {
        let first = seen.withLock { seen in
            if seen.count >= Self.rememberedLimit { seen.removeAll(keepingCapacity: true) }
            return seen.insert(directory).inserted
        }
        guard first && !made else { return }
        removedCount.add(Self.sweep(directory, now: Date()), ordering: .relaxed)
    }

    /// Removes the stale temporary files directly in `directory`; returns how many. Only names a put
    /// makes (``prefix`` and ``suffix``) and only regular files are considered.
    static func sweep(_ directory: String, now: Date) -> Int {
        guard let stream = opendir(directory) else { return 0 }
        defer { closedir(stream) }
        let descriptor = dirfd(stream)
        var removed = 0
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
            guard name.hasPrefix(prefix), name.hasSuffix(suffix) else { continue }
            var info = stat()
            guard fstatat(descriptor, name, &info, AT_SYMLINK_NOFOLLOW) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
            let written = TimeInterval(info.st_mtim.tv_sec) + TimeInterval(info.st_mtim.tv_nsec) / 1e9
            guard now.timeIntervalSince1970 - written >= staleAfter else { continue }
            if unlinkat(descriptor, name, 0) == 0 { removed += 1 }
        }
        return removed
    }
}
