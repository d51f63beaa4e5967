// Deleting finished jobs of a queue directory once they are old: done/ by default, failed/ only when asked.
public import Foundation
import ImagePipe
#if canImport(Glibc)
import Glibc
#endif

/// How long a queue directory keeps its finished jobs (`queue prune DIR`, `watch --keep-done`).
///
/// A job's age is its record's: the time it finished, whatever the original's own dates. The
/// original goes first, then its record, so an interrupted prune leaves at worst a record without
/// its original, which the next prune removes once it is as old; an original whose record is not
/// written yet is still being finished by its worker and is never touched. `failed/` is pruned only
/// when asked: it holds the only copy of uploads someone may want to fix and retry. The inbox and
/// claimed jobs are never pruned. Safe while workers run: they only add to these folders, and a file
/// already gone is not an error. A failed job's options file (``JobOptionsFile``) goes first of the
/// three, and with a record whose original is gone.
public struct QueueRetention: Sendable {
    /// What a prune did.
    public struct Outcome: Sendable, Equatable {
        /// Jobs deleted, relative to the queue root (`done/a.jpg`).
        public var deleted: [String] = []
        /// Files that could not be deleted, each with the reason.
        public var problems: [String] = []
        /// Folders left empty and removed, relative to the queue root (`done/2024/05`).
        public var removedFolders: [String] = []
    }

    /// The queue.
    public let queue: QueueDirectory

    /// The retention of `queue`.
    public init(queue: QueueDirectory) {
        self.queue = queue
    }

    /// Deletes the jobs of `done/` (and of `failed/` when `includingFailed`) that finished longer
    /// than `age` ago, with their records. Blocking: async code runs it through ``BlockingIO``.
    public func prune(olderThan age: Duration, includingFailed: Bool = false, now: Date = Date()) -> Outcome {
        var outcome = Outcome()
        var folders = [("done", queue.done, QueueDirectory.doneSuffix)]
        if includingFailed { folders.append(("failed", queue.failed, QueueDirectory.failedSuffix)) }
        let limit = age.timeInterval
        for (label, folder, suffix) in folders {
            let files = Set(QueueDirectory.files(under: folder).map(\.name))
            for name in files.sorted() where name.hasSuffix(suffix) {
                let original = String(name.dropLast(suffix.count))
                guard let seconds = QueueDirectory.secondsSinceChange(RawPath(folder + "/" + name), now: now, modification: true),
                    seconds > limit
                else { continue }
                // A record of its own name's original ("a.jpg.json" beside "a.jpg") that also
                // ends in the suffix is only a record when its original is here or it has none itself.
                if files.contains(name + suffix) { continue }
                // In failed/ only: done/ keeps no options, and there `NAME.options.json` is the record of `NAME.options`.
                let options = JobOptionsFile.name(of: original)
                if label == "failed", files.contains(options) {
                    guard remove(folder + "/" + options, &outcome) else { continue }
                }
                if files.contains(original) {
                    guard remove(folder + "/" + original, &outcome) else { continue }
                    outcome.deleted.append(label + "/" + original)
                }
                // A record whose original is gone: a prune cut short, or the pair just deleted.
                _ = remove(folder + "/" + name, &outcome)
            }
            removeEmptyFolders(under: folder, label: label, &outcome)
        }
        return outcome
    }

    /// Removes the folders under `folder` that hold nothing (dated folders of deliveries whose jobs
    /// were all pruned), deepest first; `folder` itself stays. A worker that is moving a job into a
    /// folder removed meanwhile makes it again (``ClaimArea/moveOut(_:into:record:suffix:)``), and
    /// rmdir refuses a folder that is not empty, so this never loses a file.
    private func removeEmptyFolders(under folder: String, label: String, _ outcome: inout Outcome) {
        func visit(_ relative: RawPath) -> Bool {
            let path = relative.bytes.isEmpty ? RawPath(folder) : RawPath(folder).appending(relative)
            guard let entries = try? DirectoryListing.entries(of: path) else { return false }
            var remaining = entries.count
            for entry in entries where entry.isDirectory {
                if visit(relative.appending(entry.name)) { remaining -= 1 }
            }
            guard !relative.bytes.isEmpty, remaining == 0, path.withCString({ rmdir($0) }) == 0 else { return false }
            outcome.removedFolders.append(label + "/" + relative.escaped)
            return true
        }
        _ = visit(RawPath(bytes: []))
    }

    private func remove(_ path: String, _ outcome: inout Outcome) -> Bool {
        if unlink(path) == 0 || errno == ENOENT { return true }
        outcome.problems.append("cannot delete \(path): \(String(cString: strerror(errno)))")
        return false
    }
}
