// What a queue directory holds, read without changing it: jobs by state, who runs what, why jobs failed (`queue status|list DIR`).
public import Foundation
public import ImagePipe
#if canImport(Glibc)
import Glibc
#endif

extension QueueDirectory {
    /// Opens an existing queue at `root` without creating anything: a command that only looks at a
    /// queue (or prunes it) must not turn a mistyped path into a new, empty queue.
    ///
    /// - Throws: a configuration error when `root` has none of `inbox/`, `processing/`, `done/` and
    ///   `failed/` (a folder that is missing counts as empty).
    public init(existing root: String) throws(ImagePipeError) {
        self.root = LocalPath.absolute(root)
        let folders = [inbox, processing, done, failed]
        guard folders.contains(where: Self.isDirectory) else {
            // A mistyped path is said to be missing, not taken for a folder of the wrong kind.
            guard FileManager.default.fileExists(atPath: self.root) else {
                throw .configuration("\(self.root) does not exist: give the queue directory a watch worker was started on")
            }
            throw .configuration("\(self.root) is not a queue directory: it has none of inbox/, processing/, done/, failed/")
        }
    }

    /// Counts by state, the oldest delivery's wait, jobs finished over the last minute, the
    /// running jobs and latest failures (up to `detailLimit` of each), and the options files
    /// waiting in the inbox for an original.
    public func overview(now: Date = Date(), detailLimit: Int = 10) -> QueueOverview {
        let waiting = jobs(in: .waiting, now: now)
        let running = jobs(in: .running, now: now)
        let done = finished(in: self.done, suffix: Self.doneSuffix)
        let failures = finished(in: failed, suffix: Self.failedSuffix)
        let latestFailures = jobs(in: .failed, limit: detailLimit, now: now)
        let lastMinute = (done + failures).count { job in
            Self.secondsSinceChange(RawPath(job.record), now: now, modification: true).map { $0 <= 60 } ?? false
        }
        var overview = QueueOverview(
            kind: "directory", queue: root,
            counts: [.waiting: waiting.count, .running: running.count, .done: done.count, .failed: failures.count],
            oldestWaitingSeconds: waiting.compactMap(\.ageSeconds).max(), finishedPerSecond: Double(lastMinute) / 60,
            jobs: Array(running.prefix(detailLimit)) + latestFailures)
        overview.optionsWithoutOriginal = optionsWithoutOriginal().count
        return overview
    }

    /// The jobs in `state`: waiting ones oldest first, running ones longest-running first, finished
    /// ones latest first. A queue directory has no cancelled jobs.
    public func jobs(in state: QueueOverview.State, limit: Int? = nil, now: Date = Date()) -> [QueueOverview.Job] {
        let all = allJobs(in: state, limit: limit, now: now)
        return limit.map { Array(all.prefix($0)) } ?? all
    }

    private func allJobs(in state: QueueOverview.State, limit: Int?, now: Date) -> [QueueOverview.Job] {
        switch state {
        case .waiting:
            return scanInbox().map { entry in
                var job = QueueOverview.Job(id: entry.name, state: .waiting, source: entry.name)
                // A rename into the inbox changes the file's ctime, not its mtime: the delivery's time.
                job.ageSeconds = Self.secondsSinceChange(RawPath(inbox).appending(entry.raw), now: now, modification: false)
                return job
            }.sorted { ($0.ageSeconds ?? 0) > ($1.ageSeconds ?? 0) }
        case .running:
            return claimAreas().flatMap { area in
                // An options file in an area goes with its job.
                QueueDirectory.files(under: processing + "/" + area.name).filter { !JobOptionsFile.isOptions($0.name) }.map { entry in
                    var job = QueueOverview.Job(id: entry.name, state: .running, source: entry.name)
                    // A claim is a rename into the area: the ctime is the claim's time.
                    job.ageSeconds = Self.secondsSinceChange(
                        RawPath(processing + "/" + area.name).appending(entry.raw), now: now, modification: false)
                    job.owner = area.owner
                    return job
                }
            }.sorted { ($0.ageSeconds ?? 0) > ($1.ageSeconds ?? 0) }
        case .done:
            return latestFirst(
                finished(in: done, suffix: Self.doneSuffix).map { found in
                    var job = QueueOverview.Job(id: found.name, state: .done, source: found.name)
                    job.ageSeconds = Self.secondsSinceChange(RawPath(found.record), now: now, modification: true)
                    return job
                })
        case .failed:
            // Only the records shown are read.
            let failures = latestFirst(
                finished(in: failed, suffix: Self.failedSuffix).map { found in
                    var job = QueueOverview.Job(id: found.name, state: .failed, source: found.name)
                    job.ageSeconds = Self.secondsSinceChange(RawPath(found.record), now: now, modification: true)
                    return job
                })
            return failures.prefix(limit ?? failures.count).map(withReason)
        case .cancelled:
            return []
        }
    }

    /// The suffix of a done job's record, and of a failed one's.
    static let doneSuffix = ".json", failedSuffix = ".error.json"

    /// One claim area: its name and who holds it.
    struct AreaOwner {
        var name: String
        /// `NAME (pid N on HOST)`, and `, abandoned` when no process holds its lock any more.
        var owner: String
    }

    /// The claim areas under `processing/`, each with its owner as its lock file names it.
    func claimAreas() -> [AreaOwner] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: processing) else { return [] }
        return names.sorted().filter { Self.isDirectory(processing + "/" + $0) }.map { name in
            let lock = processing + "/" + name + "/.lock"
            let written = (try? String(contentsOfFile: lock, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            var owner = written.isEmpty ? name : "\(name) (\(written))"
            if !Self.isLocked(lock) { owner += ", abandoned" }
            return AreaOwner(name: name, owner: owner)
        }
    }

    /// The finished jobs in `folder`: each original with its record beside it (an original whose
    /// record is not written yet is still being finished, and belongs to its claim).
    func finished(in folder: String, suffix: String) -> [(name: String, record: String)] {
        let names = Set(Self.files(under: folder).map(\.name))
        return names.filter { names.contains($0 + suffix) }.sorted().map { ($0, folder + "/" + $0 + suffix) }
    }

    /// A failed job with what its record says: the source, attempts, and the reason.
    private func withReason(_ job: QueueOverview.Job) -> QueueOverview.Job {
        var job = job
        let record = failed + "/" + job.id + Self.failedSuffix
        if let data = FileManager.default.contents(atPath: record), let failure = try? JSONDecoder().decode(FailureRecord.self, from: data) {
            job.source = failure.source
            // A delivery that is no image, put here by an older worker, failed no attempt: its skip
            // code says what it is.
            job.attempts = failure.skipCode == nil ? failure.attempts : nil
            job.errorCode = failure.errorCode?.description ?? failure.skipCode?.rawValue
            job.error = failure.error
        } else {
            job.error = "its record failed/\(job.id)\(Self.failedSuffix) cannot be read"
        }
        return job
    }

    private func latestFirst(_ jobs: [QueueOverview.Job]) -> [QueueOverview.Job] {
        jobs.sorted { ($0.ageSeconds ?? .infinity) < ($1.ageSeconds ?? .infinity) }
    }

    static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
    }

    /// Whether a live process holds the claim area's lock. A shared lock taken for a moment proves
    /// it free; a worker recovering areas at that moment skips this one until its next rescan.
    static func isLocked(_ lock: String) -> Bool {
        let fd = open(lock, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return flock(fd, LOCK_SH | LOCK_NB) != 0
    }

    /// Seconds since a file's content changed (`modification`) or its inode did (a rename, a link).
    static func secondsSinceChange(_ path: RawPath, now: Date, modification: Bool) -> Double? {
        var info = stat()
        guard path.withCString({ lstat($0, &info) }) == 0 else { return nil }
        let time = modification ? info.st_mtim : info.st_ctim
        return max(0, now.timeIntervalSince1970 - (Double(time.tv_sec) + Double(time.tv_nsec) / 1e9))
    }
}
