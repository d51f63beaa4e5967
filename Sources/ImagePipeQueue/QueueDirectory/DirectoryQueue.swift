// The queue directory as a JobQueue: deliveries found by inotify and rescans, claimed by rename into a claim area.
import Foundation
public import ImagePipe
public import Logging
import Synchronization

/// Jobs delivered into a ``QueueDirectory``'s inbox, claimed into this worker's ``ClaimArea``.
///
/// A full scan at start-up, inotify while running and a periodic rescan find deliveries. A claim
/// renames the file into the claim area, whose lock is the worker's claim for as long as its
/// process lives: no lease needs renewing, and a job waiting for a retry stays in the area, held
/// by this worker, with the history of its failed attempts. Finished jobs move to `done/` or
/// `failed/` beside their records. A job's options file (``JobOptionsFile``) is claimed and read
/// with its original, and never taken as a job of its own. Every file step blocks, so each runs
/// through ``BlockingIO``.
public final class DirectoryQueue: JobQueue {
    /// Settings of finding and taking deliveries.
    public struct Configuration: Sendable {
        /// The safety-net rescan of the inbox (and of abandoned claim areas).
        public var rescanInterval: Duration
        /// How long a delivery whose writers cannot be seen (another user's file) must stay unchanged
        /// before it is taken.
        public var quietPeriod: Duration
        /// How long an empty subdirectory of the inbox must stay unchanged before a rescan removes it.
        public var emptyDirectoryIdle: Duration
        /// Whether this worker notifies (`--notify-url`): it takes over the notices that stopped or
        /// dead workers' areas kept. One that does not leaves them for one that does.
        public var takesOverNotices: Bool

        /// Creates settings: rescans every 5 s, a 10 s quiet period, empty delivery folders removed
        /// after a minute, no notices taken over.
        public init(
            rescanInterval: Duration = .seconds(5), quietPeriod: Duration = .seconds(10),
            emptyDirectoryIdle: Duration = .seconds(60), takesOverNotices: Bool = false
        ) {
            self.rescanInterval = rescanInterval
            self.quietPeriod = quietPeriod
            self.emptyDirectoryIdle = emptyDirectoryIdle
            self.takesOverNotices = takesOverNotices
        }
    }

    struct State {
        var pending: [QueueDirectory.Entry] = []
        var pendingSet: Set<String> = []
        /// Jobs in the claim area, by name.
        var claimed: Set<String> = []
        /// Deliveries waiting for a job of the same name to leave the claim area.
        var busy: [String: QueueDirectory.Entry] = [:]
        /// The failed attempts of jobs held for a retry, oldest first.
        var histories: [String: [AttemptRecord]] = [:]
        var warnedBlindWriterCheck = false
        var closed = false
        var wake: (@Sendable () -> Void)?
        /// The worker's rule for the jobs of dead workers' claim areas, given at opening.
        var orphans: OrphanRule?
    }

    /// The queue directory.
    public let directory: QueueDirectory
    /// The settings.
    public let configuration: Configuration
    let logger: Logger
    let area: ClaimArea
    /// The claim area's outbox, whose notices the worker sends (`--notify-url`).
    let outbox: DirectoryOutbox
    private let watcher: InboxWatcher
    let state = Mutex(State())
    /// Jobs finishing together settle in one round (``ClaimArea/finish(_:)``): one round at a time,
    /// on a lane of its own, taking every job whose settlement came while the last one ran. The jobs
    /// wait there, not on the blocking-I/O lanes, which a claim or a probe may need meanwhile.
    let finishing: GroupCommitter<ClaimArea.Finish, Result<String, ImagePipeError>>

    /// Creates this worker's claim area in `directory`; nothing is watched until ``open(wake:)``.
    public init(
        directory: QueueDirectory, configuration: Configuration = .init(),
        logger: Logger = Logger(label: "imagepipe.queue")
    ) throws(ImagePipeError) {
        self.directory = directory
        self.configuration = configuration
        self.logger = logger
        let area = try ClaimArea(queue: directory)
        self.area = area
        self.outbox = DirectoryOutbox(area: area)
        let lane = DispatchQueue(label: "imagepipe.queue-finishing", qos: .userInitiated)
        self.finishing = GroupCommitter(maxBatch: ClaimArea.finishesPerRound) { finishes, done in
            lane.async { done(area.finish(finishes)) }
        }
        let box = WeakBox()
        self.watcher = try InboxWatcher(inbox: directory.inbox) { event in box.queue?.handle(event) }
        box.queue = self
    }

    deinit { watcher.stop() }

    /// The name of this worker's claim area.
    public var id: String { area.id }
    /// Deliveries seen and not yet claimed.
    public var pendingCount: Int { state.withLock { $0.pending.count } }

    public var displayName: String { directory.root }
    public var releasePlace: String { "inbox" }
    public var pollInterval: Duration { .milliseconds(500) }
    public var maintenanceInterval: Duration { configuration.rescanInterval }
    public var heartbeatInterval: Duration? { nil }
    /// The claim area's outbox. Only a worker that takes over notices (``Configuration/takesOverNotices``)
    /// finds those of dead workers in it: one that does not leaves them for one that does.
    public var notices: (any NoticeStore)? { outbox }

    public func open(signals: QueueSignals) async throws(ImagePipeError) {
        state.withLock {
            $0.wake = signals.wake
            $0.orphans = signals.orphans
        }
        await BlockingIO.run {
            self.recoverAbandoned()
            // Watch before scanning, so nothing delivered in between is missed.
            self.watcher.start()
            self.enqueue(self.directory.scanInbox())
        }
        logger.info("watching", metadata: ["queue": "\(directory.inbox)", "worker": "\(area.id)"])
    }

    public func claim(upTo limit: Int) async -> [ClaimedJob] {
        await withCheckedContinuation { continuation in
            claims.async { continuation.resume(returning: self.claimNow(upTo: limit)) }
        }
    }

    /// Claims run on a lane of their own: behind settlements (which wait for durability rounds) on
    /// the shared blocking-I/O lanes, a claim left the pipeline without work. One lane per queue, not
    /// per process: behind other queues' claims (tests run dozens side by side), a claim issued just
    /// before a pause (a full storage) landed long after it and took the jobs delivered meanwhile.
    private let claims = BoundedQueue(label: "imagepipe.claims", limit: 1, qos: .userInitiated)

    private func claimNow(upTo limit: Int) -> [ClaimedJob] {
        var claimed: [ClaimedJob] = []
        while claimed.count < limit {
            let entry = state.withLock { state -> QueueDirectory.Entry? in
                guard !state.closed, !state.pending.isEmpty else { return nil }
                let entry = state.pending.removeFirst()
                state.pendingSet.remove(entry.name)
                return entry
            }
            guard let entry else { break }
            if let job = claim(entry) { claimed.append(job) }
        }
        return claimed
    }

    public func maintain() async { await BlockingIO.run { self.rescan() } }

    private func rescan() {
        recoverAbandoned()
        enqueue(directory.scanInbox())
        for folder in directory.removeIdleEmptyDirectories(idleFor: configuration.emptyDirectoryIdle) {
            logger.debug("removed an empty delivery folder", metadata: ["folder": "inbox/\(folder)"])
        }
    }

    public func heartbeat(_ jobs: [ClaimedJob]) async -> HeartbeatOutcome { HeartbeatOutcome() }

    /// Moves the original into `done/` with its result record, skipped ones too (a delivery that is
    /// no image, `not_an_image`): a job ends in the folder of its state, `done` being a job that
    /// finished without failing, as a PostgreSQL row of the same job ends `done`. Its record says
    /// `skipped` and why, which is what a reader of `done/` goes by.
    public func complete(_ job: ClaimedJob, result: JobResult, notice: JobNotice?) async -> Settlement {
        let record = Data((result.jsonLine() + "\n").utf8)
        return await finish(ClaimArea.Finish(job.id, into: directory.done, record: record, suffix: ".json", notice: notice))
    }

    /// Keeps the job in the claim area, to run again here once the delay has passed. A decoder
    /// failure is also counted in the job's tally (``AttemptLedger``), so the job's next claim knows
    /// of it should this worker stop or die before the retry: a second one is final wherever it
    /// happens.
    public func retry(_ job: ClaimedJob, failure: AttemptRecord, after delay: Duration) async -> RetryDisposition {
        state.withLock { $0.histories[job.id, default: []].append(failure) }
        if failure.errorCode?.isDecoderFailure == true {
            await BlockingIO.run {
                do throws(ImagePipeError) {
                    try AttemptLedger.countDecoderFailure(
                        of: self.area.pathOf(job.id), named: job.id, after: job.job.earlierDecoderFailures, in: self.directory)
                } catch {
                    // This worker still counts it for the retry it holds.
                    self.logger.warning(
                        "cannot keep the count of a job's decoder failures: a claim after this worker stops will not know of this one",
                        metadata: ["source": "\(job.id)", "error": "\(error.reason)"])
                }
            }
        }
        return .keepHolding
    }

    public func discard(_ job: ClaimedJob, failure: AttemptRecord, result: JobResult, notice: JobNotice?) async -> Settlement {
        let history = state.withLock { $0.histories.removeValue(forKey: job.id) ?? [] } + [failure]
        let record = FailureRecord(history: history, result: result)
        return await finish(
            ClaimArea.Finish(job.id, into: directory.failed, record: record.encoded(), suffix: ".error.json", keepingOptions: true, notice: notice))
    }

    public func release(_ jobs: [ClaimedJob]) async {
        await BlockingIO.run {
            for job in jobs {
                do throws(ImagePipeError) {
                    try self.area.returnToInbox(job.id)
                } catch {
                    self.logger.error("cannot return a job to the inbox", metadata: ["job": "\(job.id)", "error": "\(error.reason)"])
                }
                self.forget(job.id)
            }
        }
    }

    /// Files in the inbox (a claimed file has left it), counting those no scan has taken yet: still
    /// being written, or in their quiet period.
    public func waitingCount() async -> Int? {
        await BlockingIO.run { max(self.pendingCount, self.directory.scanInbox().count) }
    }

    /// The inbox's files, once the jobs of dead workers' claim areas are back in it: a worker that
    /// died an instant ago has left its jobs for this one, not for nobody. The files, not the
    /// deliveries this worker saw: another worker may have claimed those since (the contract's
    /// empty check once found a job a live worker held counted as due).
    public func remainder(dueWithin horizon: Duration) async -> QueueRemainder? {
        await BlockingIO.run {
            let kept = self.recoverAbandoned()
            return QueueRemainder(due: self.directory.scanInbox().count, noticesKept: kept)
        }
    }

    /// The inbox and this worker's claim area must still be directories it may use (a volume can go away).
    public func check() async throws(ImagePipeError) -> Int? {
        try await BlockingIO.run { () throws(ImagePipeError) in try self.checkFolders() }
    }

    private func checkFolders() throws(ImagePipeError) -> Int? {
        for folder in [directory.inbox, area.path] {
            var info = stat()
            guard stat(folder, &info) == 0, info.st_mode & S_IFMT == S_IFDIR, access(folder, R_OK | W_OK | X_OK) == 0 else {
                throw ImagePipeError(.storageUnavailable, "the queue folder \(folder) cannot be used: \(String(cString: strerror(errno)))")
            }
        }
        return pendingCount
    }

    public func close() async {
        state.withLock { $0.closed = true }
        await BlockingIO.run {
            self.watcher.stop()
            self.area.removeIfEmpty()
        }
    }

    // MARK: - Finding deliveries

    private func handle(_ event: InboxWatcher.Event) {
        switch event {
        case .delivered(let entry): enqueue([entry])
        case .rescan: rescan()
        }
    }

    /// Takes over the claim areas of dead workers, their jobs getting the fates the worker's rule
    /// decides; nothing before the queue is opened, which gives the rule.
    /// - Returns: the notices it kept, of jobs it set aside or taken over from the areas.
    @discardableResult
    private func recoverAbandoned() -> Int {
        guard let orphans = state.withLock({ $0.orphans }) else { return 0 }
        let recovered = ClaimArea.recoverAbandoned(
            in: directory, except: area.id, takingNoticesInto: configuration.takesOverNotices ? area : nil,
            orphans: orphans, logger: logger)
        if !recovered.jobs.isEmpty {
            logger.notice("recovered jobs left by a worker that died", metadata: ["jobs": .stringConvertible(recovered.jobs.count)])
        }
        outbox.offer(recovered.notices)
        return configuration.takesOverNotices ? recovered.notices.count : 0
    }

    func enqueue(_ entries: [QueueDirectory.Entry]) {
        let wake = state.withLock { state -> (@Sendable () -> Void)? in
            guard !state.closed else { return nil }
            var added = false
            for entry in entries
            where !QueueDirectory.isIgnored(LocalPath.name(of: entry.name)) && !JobOptionsFile.isOptions(entry.name)
                && !state.pendingSet.contains(entry.name) && !state.claimed.contains(entry.name)
            {
                state.pending.append(entry)
                state.pendingSet.insert(entry.name)
                added = true
            }
            return added ? state.wake : nil
        }
        wake?()
    }

    // MARK: - Claiming

    /// Claims one delivery unless its writer still has it open (or may have: another user's file
    /// changed within the quiet period), another worker took it, or a job of the same name is here.
    private func claim(_ entry: QueueDirectory.Entry) -> ClaimedJob? {
        let name = entry.name
        let path = RawPath(directory.inbox).appending(entry.raw)
        switch WriterCheck.writers(of: path) {
        case .none:
            break
        case .open:
            // Its writer still has it open; the close event brings it back.
            logger.debug("still being written; waiting for its writer to close it", metadata: ["source": "\(name)"])
            return nil
        case .unknown:
            // Another user's file, and this worker may not see that user's processes: only a file left
            // unchanged for the quiet period is taken. A rescan brings it back when that has passed.
            if state.withLock({ state in
                defer { state.warnedBlindWriterCheck = true }; return !state.warnedBlindWriterCheck
            }) {
                logger.warning(
                    "cannot see whether a delivery is still being written: it belongs to another user. Such files are taken once unchanged for the quiet period; deliver by rename, or run the worker as the producers' user or with CAP_LEASE, to take them at once",
                    metadata: ["source": "\(name)", "quiet_period_ms": .stringConvertible(Int(configuration.quietPeriod.milliseconds.rounded()))])
            }
            if let age = QueueDirectory.timeSinceLastChange(path), age < configuration.quietPeriod {
                logger.debug("changed within the quiet period; waiting", metadata: ["source": "\(name)"])
                return nil
            }
        }
        switch area.claim(entry) {
        case .claimed(let claimedPath):
            logger.debug("claimed", metadata: ["source": "\(name)"])
            if entry.raw != RawPath(name) {
                logger.notice(
                    "claimed under this name: the delivered name is not valid UTF-8, its other bytes are written as %XX",
                    metadata: ["source": "\(name)"])
            }
            state.withLock { _ = $0.claimed.insert(name) }
            // Links are not followed: a delivered link could publish any file the worker can read.
            var job = Job(path: claimedPath, relativePath: name, attempt: 1, followsLinks: false)
            job.deliveredAt = directory.inbox + "/" + name
            // What earlier claims left in the job's tally: most jobs have none (one look-up that finds nothing).
            if let tally = AttemptLedger.tally(of: claimedPath, in: directory) {
                job.earlierDecoderFailures = tally.decoderFailures
                if tally.workerDeaths > 0 {
                    logger.notice(
                        "claimed a job that workers died holding",
                        metadata: [
                            "source": "\(name)", "worker_deaths": .stringConvertible(tally.workerDeaths),
                            "max_attempts": .stringConvertible(state.withLock { $0.orphans?.maxAttempts ?? 0 }),
                        ])
                }
            }
            do throws(ImagePipeError) {
                let options = try readOptions(of: name)
                job.focus = options?.focus
                job.traceParent = options?.traceparent
            } catch {
                // Its options cannot be used: the worker fails it for good (see ``ClaimedJob/refusal``).
                return ClaimedJob(id: name, job: job, refusal: error)
            }
            return ClaimedJob(id: name, job: job)
        case .gone:
            return nil
        case .busy:
            state.withLock { $0.busy[name] = entry }
            return nil
        case .failed(let reason):
            logger.error("\(reason)")
            return nil
        }
    }
}

/// Lets the watcher's handler reach the queue without a retain cycle.
private final class WeakBox: Sendable {
    private let reference = Mutex<Weak?>(nil)
    private struct Weak { weak var queue: DirectoryQueue? }

    var queue: DirectoryQueue? {
        get { reference.withLock { $0?.queue } }
        set { reference.withLock { $0 = Weak(queue: newValue) } }
    }
}
