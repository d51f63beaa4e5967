// Sending failed jobs back to the inbox (`imagepipe retry`), safely while workers run.
import Foundation
public import ImagePipe
#if canImport(Glibc)
import Glibc
#endif

/// The jobs in `failed/`, and moving them back to the inbox for another try.
///
/// A job leaves `failed/` through a claim area of its own, the way workers move jobs: its original
/// is moved (hard link, then unlink) into the area, its error record removed, then it is returned to
/// the inbox. A worker never sees a job both in the inbox and in `failed/`, so one that fails again
/// at once writes a new record that this move cannot remove; a crash midway leaves the job in the
/// claim area, and the next worker to start returns it to the inbox. An inbox file of the same name
/// is never replaced: the job gets a numbered name beside it (`photo.1.jpg`). A job's options file
/// (``JobOptionsFile``) goes back with it: copied into the claim area before the original moves (a
/// crash in between leaves the copy alone there, which the next worker removes, and the job in
/// `failed/` as it was), removed from `failed/` before the error record. It comes back with no
/// count of the workers that died holding it or of its decoder failures (``AttemptLedger``).
public struct FailedJobs: Sendable {
    /// What happened to one job.
    public enum Outcome: Sendable, Equatable {
        /// Moved from `failed/` to the inbox; both paths relative to the queue root.
        case returned(from: String, to: String)
        /// It could not be moved; the reason names the file.
        case failed(String)
    }

    /// The queue.
    public let queue: QueueDirectory

    /// The failed jobs of `queue`.
    public init(queue: QueueDirectory) {
        self.queue = queue
    }

    /// The originals in `failed/` (not their error records or options files), relative to it, sorted.
    public func list() -> [String] {
        QueueDirectory.files(under: queue.failed).map(\.name).filter { !$0.hasSuffix(Self.recordSuffix) && !JobOptionsFile.isOptions($0) }
    }

    /// The failed jobs at `paths` (relative to `failed/`; a folder stands for every job under it),
    /// and the paths that name none.
    public func select(_ paths: [String]) -> (jobs: [String], unknown: [String]) {
        let all = list()
        var jobs: [String] = [], unknown: [String] = []
        for path in paths {
            let trimmed = path.split(separator: "/").joined(separator: "/")
            let matching = all.filter { $0 == trimmed || $0.hasPrefix(trimmed + "/") }
            if matching.isEmpty { unknown.append(path) }
            jobs += matching.filter { !jobs.contains($0) }
        }
        return (jobs, unknown)
    }

    /// Moves each job back to the inbox and removes its error record.
    public func retry(_ jobs: [String]) throws(ImagePipeError) -> [Outcome] {
        guard !jobs.isEmpty else { return [] }
        let area = try ClaimArea(queue: queue)
        defer { area.removeIfEmpty() }
        return jobs.map { relative -> Outcome in
            do throws(ImagePipeError) {
                return try retry(relative, through: area)
            } catch {
                return .failed("cannot retry \(relative): \(error.reason)")
            }
        }
    }

    private func retry(_ relative: String, through area: ClaimArea) throws(ImagePipeError) -> Outcome {
        // A new start: no worker death or decoder failure counted before counts now. A tally is
        // removed when its job's record is written; one a crash left then goes here.
        AttemptLedger.forget(queue.failed + "/" + relative, in: queue)
        let options = queue.failed + "/" + JobOptionsFile.name(of: relative)
        if FileMoves.exists(options) { try FileMoves.keepCopy(options, at: area.pathOf(JobOptionsFile.name(of: relative)), staging: area.path) }
        try FileMoves.moveKeepingBoth(queue.failed + "/" + relative, to: area.pathOf(relative))
        if unlink(options) != 0 && errno != ENOENT { throw FileMoves.failure("cannot remove \(options)") }
        let record = queue.failed + "/" + relative + Self.recordSuffix
        if unlink(record) != 0 && errno != ENOENT { throw FileMoves.failure("cannot remove \(record)") }
        FileMoves.removeEmptyParents(of: relative, under: queue.failed)
        let placed = try area.returnToInbox(relative)
        return .returned(from: "failed/" + relative, to: String(placed.dropFirst(queue.root.count + 1)))
    }

    private static let recordSuffix = ".error.json"
}
