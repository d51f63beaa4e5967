// A worker's own directory under processing/, locked for as long as the worker's process lives.
public import Foundation
public import ImagePipe
public import Logging
#if canImport(Glibc)
import Glibc
#endif

/// Where one worker keeps the jobs it has claimed.
///
/// The area is `processing/<host>-<pid>-<random>/` and holds an exclusive `flock` on its `.lock`
/// file while the process lives. The kernel drops the lock when the process dies, even by
/// `kill -9`, so any worker can prove an area abandoned by taking its lock, and return its jobs to
/// the inbox.
public final class ClaimArea: Sendable {
    /// What happened to an attempt to claim a delivered file.
    public enum ClaimOutcome: Sendable, Equatable {
        /// The file is now in this area, at the given path.
        case claimed(String)
        /// Another worker claimed it first, or it was withdrawn.
        case gone
        /// A job with the same name is already in this area; try again after it finishes.
        case busy
        /// The rename failed for another reason.
        case failed(String)
    }

    /// The area's name: `<host>-<pid>-<random>`.
    public let id: String
    /// The area's absolute path.
    public let path: String
    /// The queue it belongs to.
    public let queue: QueueDirectory
    private let lockDescriptor: Int32

    /// Creates and locks a new area for this process.
    public init(queue: QueueDirectory) throws(ImagePipeError) {
        id = WorkerIdentity.make()
        path = queue.processing + "/" + id
        self.queue = queue
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw .configuration("cannot create claim area \(path): \(IOErrorText.reason(of: error))")
        }
        let fd = open(path + "/.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0, flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            throw .configuration("cannot lock claim area \(path): \(String(cString: strerror(errno)))")
        }
        let owner = "pid \(getpid()) on \(WorkerIdentity.hostName())\n"
        _ = owner.withCString { write(fd, $0, strlen($0)) }
        lockDescriptor = fd
    }

    deinit { close(lockDescriptor) }

    /// The path a claimed job has in this area.
    public func pathOf(_ relative: String) -> String { path + "/" + relative }

    /// Claims a delivery by renaming it into this area: of several workers, exactly one wins.
    ///
    /// It is claimed under its escaped name (``QueueDirectory/Entry/name``), so a name that is not
    /// valid UTF-8 goes by a name every later step can use. Its options file (``JobOptionsFile``)
    /// follows it, once the original is this worker's: a worker that loses the race for the
    /// original never touches them, and one killed between the two renames leaves the options in
    /// the inbox, where the original goes back to.
    public func claim(_ delivery: QueueDirectory.Entry) -> ClaimOutcome {
        let target = pathOf(delivery.name)
        if FileMoves.exists(target) { return .busy }
        do {
            try DurableFile.makeParent(of: target)
        } catch {
            return .failed(error.reason)
        }
        BlockingIO.mayBlock("rename \(delivery.name) into the claim area")
        let renamed = RawPath(queue.inbox).appending(delivery.raw).withCString { source in rename(source, target) }
        if renamed != 0 {
            if errno == ENOENT { return .gone }
            return .failed("cannot claim \(delivery.name): \(String(cString: strerror(errno)))")
        }
        if let reason = claimOptions(of: delivery) {
            // Without its options the job would run as it was not meant to: it waits in the inbox.
            do throws(ImagePipeError) {
                try returnToInbox(delivery.name)
            } catch {
                return .failed("\(reason); and it cannot be returned to the inbox: \(error.reason)")
            }
            return .failed(reason)
        }
        return .claimed(target)
    }

    /// Moves a claimed original's options file from the inbox into this area (replacing one an
    /// earlier job of the name left here); nil when it moved or there is none, else why not.
    private func claimOptions(of delivery: QueueDirectory.Entry) -> String? {
        let source = RawPath(queue.inbox).appending(RawPath(bytes: delivery.raw.bytes + Array(JobOptionsFile.suffix.utf8)))
        var info = stat()
        // A folder of that name is a folder of deliveries, not options.
        guard source.withCString({ lstat($0, &info) }) == 0, info.st_mode & S_IFMT != S_IFDIR else { return nil }
        let target = pathOf(JobOptionsFile.name(of: delivery.name))
        BlockingIO.mayBlock("rename \(JobOptionsFile.name(of: delivery.name)) into the claim area")
        if source.withCString({ rename($0, target) }) == 0 || errno == ENOENT { return nil }
        return "cannot claim \(JobOptionsFile.name(of: delivery.name)): \(String(cString: strerror(errno)))"
    }

    /// Puts a claimed job back into the inbox (shutdown, or giving up on it for now), with its
    /// options file when it has one.
    @discardableResult
    public func returnToInbox(_ relative: String) throws(ImagePipeError) -> String {
        let placed = try FileMoves.moveJobKeepingBoth(
            pathOf(relative), options: pathOf(JobOptionsFile.name(of: relative)), to: queue.inbox + "/" + relative)
        removeEmptyParents(of: relative)
        return placed
    }

    /// Moves a finished job to `done/` or `failed/` beside its record: a round of one
    /// (``finish(_:)``, which finishes many at once).
    ///
    /// The original is linked into place first, then the record is written, then the claim is
    /// released. A crash before the record leaves the claim to run again, and that run finds its own
    /// original already linked (the same file) and completes the move under the same name, so a job
    /// is never finished twice under two names.
    ///
    /// The job's options file (``JobOptionsFile``) is put beside the original before the record
    /// when `keepingOptions` (`failed/`: a job sent back keeps them), and leaves the area only once
    /// the record is written, so options found alone in an area belong to a finished job. Its
    /// ``AttemptTally``, if it has one, is removed once the record is written.
    ///
    /// - Parameters:
    ///   - record: the JSON to write beside the original.
    ///   - suffix: `.json` for done, `.error.json` for failed.
    ///   - keepingOptions: whether the options go beside the original; else they are removed.
    /// - Returns: the original's new path.
    @discardableResult
    public func moveOut(
        _ relative: String, into directory: String, record: Data, suffix: String, keepingOptions: Bool = false
    ) throws(ImagePipeError) -> String {
        try finish([Finish(relative, into: directory, record: record, suffix: suffix, keepingOptions: keepingOptions)])[0].get()
    }

    /// Whether a claimed file was already finished (it is in `done/` or `failed/` with its record) and
    /// only its release was cut short.
    static func isFinished(_ claimed: String, relative: String, in queue: QueueDirectory) -> Bool {
        for (directory, suffix) in [(queue.done, ".json"), (queue.failed, ".error.json")] {
            let target = directory + "/" + relative
            var number = 0
            var candidate = target
            // A name whose options file alone is there was passed over by a job keeping its own.
            while FileMoves.exists(candidate) || FileMoves.exists(candidate + suffix) || FileMoves.exists(JobOptionsFile.name(of: candidate)) {
                if FileMoves.sameFile(claimed, candidate) { return FileMoves.exists(candidate + suffix) }
                number += 1
                candidate = FileMoves.numbered(target, number)
            }
        }
        return false
    }

    /// Removes the area when no job is left in it (a clean shutdown) and no notice it keeps is
    /// undelivered; the lock goes with the process, and the next worker takes what is left over.
    public func removeIfEmpty() {
        guard QueueDirectory.files(under: path).isEmpty, Self.keptNotices(in: path).isEmpty else { return }
        unlink(path + "/.lock")
        try? FileManager.default.removeItem(atPath: path)
    }

    /// Removes subdirectories of this area left empty by a job leaving it.
    private func removeEmptyParents(of relative: String) {
        FileMoves.removeEmptyParents(of: relative, under: path)
    }

    /// What ``recoverAbandoned(in:except:takingNoticesInto:orphans:logger:)`` found.
    public struct Recovery: Sendable {
        /// The relative paths returned to the inbox.
        public var jobs: [String] = []
        /// The relative paths set aside in `failed/` as `worker_crashed`: as many workers died
        /// holding each as the worker's rule allows.
        public var setAside: [String] = []
        /// Kept notices of recorded jobs, now in the recovering worker's outbox, to be sent.
        public var notices: [JobNotice] = []
    }

    /// Returns the jobs of every abandoned area (its lock free) to the inbox, each with its options
    /// file, takes over the notices it kept into `own` (see ``takeOverNotices(of:in:into:logger:)``),
    /// and removes the area.
    ///
    /// Each job the area holds counts one more worker that died holding it (``AttemptLedger``), as
    /// an expired lease counts a failed attempt on PostgreSQL: every job the dead worker held, those
    /// that only waited for their turn or their retry too. What becomes of it then is the worker's
    /// rule (`orphans`, the same for every queue, ``WorkerStateMachine/fate(of:retry:)``), the
    /// deaths being its attempts: it goes back to the inbox, or to `failed/` as `worker_crashed`
    /// (see ``setAside(_:in:worker:tally:of:maxAttempts:notifying:logger:)``), so a job that kills
    /// its worker does not kill every worker restarted after it. Without a rule nothing is set aside.
    ///
    /// Options whose original is not in the area belong to a job that finished: every step that
    /// takes an original out of an area (a claim never does) takes its options out before it, or has
    /// put a copy of them beside the original first. They are removed.
    public static func recoverAbandoned(
        in queue: QueueDirectory, except ownID: String?, takingNoticesInto own: ClaimArea? = nil, orphans: OrphanRule? = nil,
        logger: Logger
    ) -> Recovery {
        guard let areas = try? FileManager.default.contentsOfDirectory(atPath: queue.processing) else { return Recovery() }
        var recovery = Recovery()
        for area in areas where area != ownID {
            let areaPath = queue.processing + "/" + area
            var info = stat()
            guard lstat(areaPath, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { continue }
            let fd = open(areaPath + "/.lock", O_RDWR | O_CLOEXEC)
            if fd < 0 {
                // A worker creates its lock right after its directory; only an old lock-less area is abandoned.
                guard Date().timeIntervalSince1970 - Double(info.st_mtim.tv_sec) > 60 else { continue }
            } else if flock(fd, LOCK_EX | LOCK_NB) != 0 {
                close(fd)
                continue
            }
            defer { if fd >= 0 { close(fd) } }
            // Before the claims move: whether a notice may go depends on its claim.
            recovery.notices += takeOverNotices(of: areaPath, in: queue, into: own, logger: logger)
            let names = QueueDirectory.files(under: areaPath).map(\.name)
            let present = Set(names)
            var returned = 0, aside = 0
            for relative in names {
                let claimed = areaPath + "/" + relative
                let options = areaPath + "/" + JobOptionsFile.name(of: relative)
                if JobOptionsFile.isOptions(relative) {
                    if !present.contains(JobOptionsFile.original(of: relative)) { unlink(claimed) }
                    continue
                }
                if isFinished(claimed, relative: relative, in: queue) {
                    AttemptLedger.forget(claimed, in: queue)
                    unlink(options)
                    unlink(claimed)
                    continue
                }
                do {
                    // Counted before the job leaves the area: a take-over cut short after this finds the
                    // death counted when it is done again.
                    let tally = try AttemptLedger.countDeath(of: area, holding: claimed, named: relative, in: queue)
                    let orphan = Orphan(id: relative, source: relative, attempts: tally.workerDeaths, worker: area)
                    // A queue directory has no cancel requests: a job that ends, fails.
                    if let orphans, orphans.fate(of: orphan) != .retry {
                        if setAside(
                            relative, in: areaPath, worker: area, tally: tally, of: queue, maxAttempts: orphans.maxAttempts, notifying: own != nil,
                            logger: logger)
                        {
                            recovery.setAside.append(relative)
                            aside += 1
                        }
                        // One that could not be set aside stays here, for the next take-over to try again:
                        // in the inbox it would kill another worker.
                        continue
                    }
                } catch {
                    logger.error(
                        "cannot count the death of the worker that held a job; it goes back to the inbox uncounted",
                        metadata: ["source": "\(relative)", "area": "\(area)", "error": "\(error.reason)"])
                }
                do {
                    try FileMoves.moveJobKeepingBoth(claimed, options: options, to: queue.inbox + "/" + relative)
                    recovery.jobs.append(relative)
                    returned += 1
                } catch {
                    logger.error(
                        "cannot return a job from an abandoned claim area",
                        metadata: ["source": "\(relative)", "area": "\(area)", "error": "\(error.reason)"])
                }
            }
            // The notices of the jobs set aside, kept in this area before their records, go now.
            if aside > 0 { recovery.notices += takeOverNotices(of: areaPath, in: queue, into: own, logger: logger) }
            if QueueDirectory.files(under: areaPath).isEmpty, keptNotices(in: areaPath).isEmpty {
                unlink(areaPath + "/.lock")
                try? FileManager.default.removeItem(atPath: areaPath)
                logger.notice(
                    "returned the jobs of an abandoned claim area to the inbox",
                    metadata: ["area": "\(area)", "jobs": .stringConvertible(returned), "set_aside": .stringConvertible(aside)])
            }
        }
        return recovery
    }
}
