// The watch-mode worker: finds deliveries, claims them as capacity allows, runs them, finishes or retries them.
import Dispatch
import Foundation
import ImagePipe
import Logging
import Synchronization

/// Runs the jobs of a queue directory through a ``JobPipeline``.
///
/// A full scan at start-up, inotify while running and a periodic rescan find deliveries. One claim
/// thread takes them in order, but only after reserving room in the pipeline, so a worker never
/// holds more claimed jobs than it can work on, however many files arrive. Each finished job moves
/// to `done/` or `failed/`; transient failures are retried with backoff; on shutdown, jobs not
/// finished within the timeout go back to the inbox.
public final class QueueWorker: Sendable {
    /// Worker settings.
    public struct Configuration: Sendable {
        /// Retries of transient failures.
        public var retry: RetryPolicy
        /// How long in-flight jobs may run after a shutdown request before they go back to the inbox.
        public var shutdownTimeout: Duration
        /// The safety-net rescan of the inbox (and of abandoned claim areas).
        public var rescanInterval: Duration
        /// How often a status line is logged; zero for never.
        public var statusInterval: Duration
        /// How long a delivery whose writers cannot be seen (another user's file) must stay unchanged
        /// before it is taken.
        public var quietPeriod: Duration
        /// How long an empty subdirectory of the inbox must stay unchanged before a rescan removes it.
        public var emptyDirectoryIdle: Duration
        /// How long claiming pauses after a job finds the storage full; the pause doubles while the
        /// storage stays full, up to the retry policy's longest delay.
        public var fullStoragePause: Duration

        /// Creates settings: 5 attempts, 30 s shutdown timeout, rescans every 5 s, status every 30 s,
        /// a 10 s quiet period, empty delivery folders removed after a minute, a 5 s first pause when
        /// the storage is full.
        public init(retry: RetryPolicy = .init(), shutdownTimeout: Duration = .seconds(30),
                    rescanInterval: Duration = .seconds(5), statusInterval: Duration = .seconds(30),
                    quietPeriod: Duration = .seconds(10), emptyDirectoryIdle: Duration = .seconds(60),
                    fullStoragePause: Duration = .seconds(5)) {
            self.retry = retry
            self.shutdownTimeout = shutdownTimeout
            self.rescanInterval = rescanInterval
            self.statusInterval = statusInterval
            self.quietPeriod = quietPeriod
            self.emptyDirectoryIdle = emptyDirectoryIdle
            self.fullStoragePause = fullStoragePause
        }
    }

    /// Counts since start.
    public struct Statistics: Sendable, Equatable {
        /// Deliveries seen and not yet claimed.
        public var waiting = 0
        /// Claimed jobs in the pipeline.
        public var inFlight = 0
        /// Jobs waiting for a retry.
        public var retrying = 0
        /// Jobs finished into done/.
        public var done = 0
        /// Jobs finished into failed/.
        public var failed = 0
    }

    private enum JobState {
        case inFlight(attempt: Int)
        case waitingRetry(attempt: Int)
    }

    private struct State: ~Copyable {
        var pending: [QueueDirectory.Entry] = []
        var pendingSet: Set<String> = []
        var readyRetries: [Job] = []
        var jobs: [String: JobState] = [:]
        var history: [String: [AttemptRecord]] = [:]
        /// Deliveries waiting for a job of the same name to leave the claim area.
        var busy: [String: QueueDirectory.Entry] = [:]
        var abandoned: Set<String> = []
        /// While the storage is full: failures in a row and when claiming may resume.
        var fullStorage: (streak: Int, until: ContinuousClock.Instant)?
        var stopping = false
        var stoppingNow = false
        var warnedBlindWriterCheck = false
        var started = false
        var stopped = false
        var stopWaiters: [CheckedContinuation<Void, Never>] = []
        var statistics = Statistics()
        var lastStatus = (at: ContinuousClock.now, finished: 0)
    }

    /// The queue.
    public let queue: QueueDirectory
    /// The pipeline jobs run through.
    public let pipeline: JobPipeline
    /// The settings.
    public let configuration: Configuration
    private let logger: Logger
    private let area: ClaimArea
    private let state = Mutex(State())
    private let wakeup = DispatchSemaphore(value: 0)
    private let claimThreadDone = DispatchSemaphore(value: 0)
    /// Signalled when jobs in flight are done, or when ``stopNow()`` cuts the wait for them short.
    private let drainWake = DispatchSemaphore(value: 0)
    private let timers = DispatchQueue(label: "imagepipe.queue-timers")
    private let watcher: InboxWatcher
    // Timer sources are thread-safe; the existential is just not marked Sendable.
    nonisolated(unsafe) private let rescanTimer: any DispatchSourceTimer
    nonisolated(unsafe) private let statusTimer: any DispatchSourceTimer

    /// Creates a worker with its own claim area in `queue`.
    public init(queue: QueueDirectory, pipeline: JobPipeline, configuration: Configuration = .init(),
                logger: Logger = Logger(label: "imagepipe.queue")) throws(ImagePipeError) {
        self.queue = queue
        self.pipeline = pipeline
        self.configuration = configuration
        self.logger = logger
        self.area = try ClaimArea(queue: queue)
        let box = WeakBox()
        self.watcher = try InboxWatcher(inbox: queue.inbox) { event in box.worker?.handle(event) }
        self.rescanTimer = DispatchSource.makeTimerSource(queue: timers)
        self.statusTimer = DispatchSource.makeTimerSource(queue: timers)
        box.worker = self
        // Running from the start but scheduled never: a Dispatch source released while suspended is a crash.
        for timer in [rescanTimer, statusTimer] {
            timer.schedule(deadline: .distantFuture)
            timer.resume()
        }
        rescanTimer.setEventHandler { [weak self] in self?.rescan() }
        statusTimer.setEventHandler { [weak self] in self?.logStatus() }
    }

    deinit {
        rescanTimer.cancel()
        statusTimer.cancel()
        watcher.stop()
    }

    /// The name of this worker's claim area.
    public var id: String { area.id }

    /// A snapshot of the counters.
    public var statistics: Statistics {
        state.withLock { state in
            var statistics = state.statistics
            statistics.waiting = state.pending.count
            statistics.inFlight = state.jobs.values.filter { if case .inFlight = $0 { true } else { false } }.count
            statistics.retrying = state.jobs.count - statistics.inFlight
            return statistics
        }
    }

    /// Recovers abandoned claims, scans the inbox, starts watching and claiming.
    public func start() {
        let recovered = ClaimArea.recoverAbandoned(in: queue, except: area.id, logger: logger)
        if !recovered.isEmpty { logger.notice("recovered \(recovered.count) job(s) left by a worker that died") }
        // Watch before scanning, so nothing delivered in between is missed.
        watcher.start()
        enqueue(queue.scanInbox())
        logger.info("watching \(queue.inbox) as \(area.id)")

        rescanTimer.schedule(deadline: .now() + configuration.rescanInterval.timeInterval,
                             repeating: configuration.rescanInterval.timeInterval)
        if configuration.statusInterval > .zero {
            statusTimer.schedule(deadline: .now() + configuration.statusInterval.timeInterval,
                                 repeating: configuration.statusInterval.timeInterval)
        }
        state.withLock { $0.started = true }
        let thread = Thread { [self] in
            claimLoop()
            claimThreadDone.signal()
        }
        thread.name = "imagepipe.claim"
        thread.start()
    }

    /// Stops claiming, lets in-flight jobs finish within the shutdown timeout, returns the rest to the
    /// inbox. Blocks until done, at the latest when the timeout has passed; safe to call more than once.
    public func shutdown() {
        let deadline = DispatchTime.now() + configuration.shutdownTimeout.timeInterval
        let claiming = state.withLock { $0.started }
        let waiting: [String]? = state.withLock { state in
            guard !state.stopping else { return nil }
            state.stopping = true
            let waiting = state.jobs.compactMap { name, job -> String? in
                if case .waitingRetry = job { return name } else { return nil }
            }
            for name in waiting { state.jobs[name] = nil }
            state.readyRetries.removeAll()
            return waiting
        }
        guard let waiting else {
            waitUntilStoppedBlocking()
            return
        }
        logger.notice("shutting down: no new claims, waiting up to \(configuration.shutdownTimeout) for jobs in flight")
        watcher.stop()
        rescanTimer.cancel()
        statusTimer.cancel()
        wakeup.signal()
        if claiming { claimThreadDone.wait() }
        for name in waiting { returnToInbox(name) }

        if !waitForJobsInFlight(until: deadline) {
            let unfinished = state.withLock { state -> [String] in
                let names = Array(state.jobs.keys)
                state.abandoned.formUnion(names)
                state.jobs.removeAll()
                return names
            }
            for name in unfinished { returnToInbox(name) }
            if state.withLock({ $0.stoppingNow }) {
                logger.warning("stopped at once: returned \(unfinished.count) job(s) in flight to the inbox")
            } else {
                logger.warning("shutdown timeout: returned \(unfinished.count) unfinished job(s) to the inbox")
            }
        }
        let waiters = state.withLock { state in
            state.stopped = true
            defer { state.stopWaiters.removeAll() }
            return state.stopWaiters
        }
        area.removeIfEmpty()
        logStatus()
        logger.notice("stopped")
        for waiter in waiters { waiter.resume() }
    }

    /// Stops at once: jobs in flight are not waited for, and they and every job waiting for a retry
    /// go back to the inbox. Cuts a running ``shutdown()`` short; blocks until stopped.
    public func stopNow() {
        let first = state.withLock { state -> Bool in
            defer { state.stoppingNow = true }
            return !state.stoppingNow
        }
        if first {
            logger.notice("stopping now: every job goes back to the inbox")
            drainWake.signal()
        }
        shutdown()
    }

    /// Waits until no job is in flight; false when the deadline passed or ``stopNow()`` was called first.
    private func waitForJobsInFlight(until deadline: DispatchTime) -> Bool {
        if state.withLock({ $0.stoppingNow }) { return false }
        // The pipeline's wait cannot be interrupted, so it runs on a thread of its own and wakes this one.
        DispatchQueue.global().async { [pipeline, drainWake] in
            if pipeline.waitUntilIdle(timeout: deadline) { drainWake.signal() }
        }
        _ = drainWake.wait(timeout: deadline)
        return !state.withLock({ $0.stoppingNow }) && pipeline.waitUntilIdle(timeout: .now())
    }

    /// Suspends until ``shutdown()`` has finished.
    public func waitUntilStopped() async {
        await withCheckedContinuation { continuation in
            let resumeNow = state.withLock { state -> Bool in
                if state.stopped { return true }
                state.stopWaiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    private func waitUntilStoppedBlocking() {
        while !state.withLock({ $0.stopped }) { Thread.sleep(forTimeInterval: 0.01) }
    }

    // MARK: - Finding deliveries

    private func handle(_ event: InboxWatcher.Event) {
        switch event {
        case .delivered(let entry): enqueue([entry])
        case .rescan: rescan()
        }
    }

    private func rescan() {
        let recovered = ClaimArea.recoverAbandoned(in: queue, except: area.id, logger: logger)
        if !recovered.isEmpty { logger.notice("recovered \(recovered.count) job(s) left by a worker that died") }
        enqueue(queue.scanInbox())
        for directory in queue.removeIdleEmptyDirectories(idleFor: configuration.emptyDirectoryIdle) {
            logger.debug("removed the empty delivery folder inbox/\(directory)")
        }
    }

    private func enqueue(_ entries: [QueueDirectory.Entry]) {
        let added = state.withLock { state -> Bool in
            guard !state.stopping else { return false }
            var added = false
            for entry in entries where !QueueDirectory.isIgnored((entry.name as NSString).lastPathComponent)
                && !state.pendingSet.contains(entry.name) && state.jobs[entry.name] == nil {
                state.pending.append(entry)
                state.pendingSet.insert(entry.name)
                added = true
            }
            return added
        }
        if added { wakeup.signal() }
    }

    // MARK: - Claiming

    private enum Work {
        case retry(Job)
        case candidate(QueueDirectory.Entry)
    }

    private func claimLoop() {
        // Jobs waiting for a retry hold no pipeline room but still count here: during a storage outage a
        // worker must not drain the inbox into its claim area, where other workers cannot reach them.
        let holdLimit = pipeline.configuration.maxInFlight
        while true {
            let hasWork = state.withLock { state -> Bool? in
                if state.stopping { return nil }
                return !state.readyRetries.isEmpty || (!state.pending.isEmpty && state.jobs.count < holdLimit && !Self.pausedForFullStorage(state))
            }
            guard let hasWork else { return }
            if !hasWork {
                _ = wakeup.wait(timeout: .now() + .milliseconds(500))
                continue
            }
            // Reserve room first: a claimed job must never wait for the pipeline.
            guard pipeline.reserve(timeout: .now() + .milliseconds(200)) else { continue }
            let work = state.withLock { state -> Work? in
                if state.stopping { return nil }
                if !state.readyRetries.isEmpty { return .retry(state.readyRetries.removeFirst()) }
                guard !state.pending.isEmpty, state.jobs.count < holdLimit, !Self.pausedForFullStorage(state) else { return nil }
                let entry = state.pending.removeFirst()
                state.pendingSet.remove(entry.name)
                return .candidate(entry)
            }
            switch work {
            case nil:
                pipeline.cancelReservation()
            case .retry(let job):
                state.withLock { $0.jobs[job.relativePath] = .inFlight(attempt: job.attempt) }
                run(job)
            case .candidate(let entry):
                claim(entry)
            }
        }
    }

    /// Whether new claims wait because the storage was found full a moment ago.
    private static func pausedForFullStorage(_ state: borrowing State) -> Bool {
        guard let fullStorage = state.fullStorage else { return false }
        return ContinuousClock.now < fullStorage.until
    }

    private func claim(_ entry: QueueDirectory.Entry) {
        let name = entry.name
        let path = RawPath(queue.inbox).appending(entry.raw)
        switch WriterCheck.writers(of: path) {
        case .none:
            break
        case .open:
            // Its writer still has it open; the close event brings it back.
            logger.debug("\(name) is still being written; waiting for its writer to close it")
            pipeline.cancelReservation()
            return
        case .unknown:
            // Another user's file, and this worker may not see that user's processes: only a file left
            // unchanged for the quiet period is taken. A rescan brings it back when that has passed.
            if state.withLock({ state in defer { state.warnedBlindWriterCheck = true }; return !state.warnedBlindWriterCheck }) {
                logger.warning("cannot see whether \(name) is still being written: it belongs to another user. Files are taken once unchanged for \(configuration.quietPeriod.formattedSeconds); deliver by rename, or run the worker as the producers' user or with CAP_LEASE, to take them at once")
            }
            if let age = QueueDirectory.timeSinceLastChange(path), age < configuration.quietPeriod {
                pipeline.cancelReservation()
                return
            }
        }
        switch area.claim(entry) {
        case .claimed(let claimedPath):
            logger.debug("claimed \(name)")
            if entry.raw != RawPath(name) {
                logger.notice("claimed \(name) under this name: the delivered name is not valid UTF-8, its other bytes are written as %XX")
            }
            state.withLock { $0.jobs[name] = .inFlight(attempt: 1) }
            // Links are not followed: a delivered link could publish any file the worker can read.
            run(Job(path: claimedPath, relativePath: name, attempt: 1, followsLinks: false))
        case .gone:
            pipeline.cancelReservation()
        case .busy:
            state.withLock { $0.busy[name] = entry }
            pipeline.cancelReservation()
        case .failed(let reason):
            logger.error("\(reason)")
            pipeline.cancelReservation()
        }
    }

    private func run(_ job: Job) {
        pipeline.submitReserved(job) { [self] result in finished(job, result) }
    }

    // MARK: - Finishing

    private func finished(_ job: Job, _ result: JobResult) {
        let name = job.relativePath
        noteStorage(result)
        enum Next { case ignore, done, retry(Duration), giveBack, fail([AttemptRecord]) }
        let next = state.withLock { state -> Next in
            if state.abandoned.contains(name) { return .ignore }
            // An up-to-date re-delivery (every output in place from the same bytes) is done too.
            if result.status != .failed { return .done }
            state.history[name, default: []].append(AttemptRecord(result))
            // A store that refuses (expired credentials, a bucket policy) is put right outside the job, so
            // its jobs wait and retry like any other storage failure instead of failing at once.
            if result.transient == true || result.errorCode == .storageRejected {
                if state.stopping { return .giveBack }
                if configuration.retry.shouldRetry(afterAttempt: job.attempt) {
                    state.jobs[name] = .waitingRetry(attempt: job.attempt)
                    return .retry(configuration.retry.delay(afterAttempt: job.attempt))
                }
            }
            return .fail(state.history[name] ?? [])
        }
        switch next {
        case .ignore:
            return
        case .done:
            finish(name) { () throws(ImagePipeError) in try area.finish(name, into: queue.done, record: Data((result.jsonLine() + "\n").utf8), suffix: ".json") }
            logger.info("done \(name) in \(Int(result.timings.totalMs)) ms", metadata: [
                "decode_ms": "\(Int(result.timings.decodeMs))", "encode_ms": "\(Int(result.timings.encodeMs))",
                "store_ms": "\(Int(result.timings.storeMs))", "attempt": "\(job.attempt)",
            ])
            state.withLock { $0.statistics.done += 1 }
        case .retry(let delay):
            logger.warning("attempt \(job.attempt)/\(configuration.retry.maxAttempts) of \(name) failed, retrying in \(delay.formattedSeconds): \(result.error ?? "")")
            timers.asyncAfter(deadline: .now() + delay.timeInterval) { [self] in
                let scheduled = state.withLock { state -> Bool in
                    guard !state.stopping, case .waitingRetry = state.jobs[name] else { return false }
                    var next = job
                    next.attempt += 1
                    state.readyRetries.append(next)
                    return true
                }
                if scheduled { wakeup.signal() }
            }
            return
        case .giveBack:
            returnToInbox(name)
            return
        case .fail(let history):
            let record = FailureRecord(source: name, error: result.error ?? "unknown error", errorCode: result.errorCode,
                                       attempts: job.attempt, history: history, result: result)
            finish(name) { () throws(ImagePipeError) in try area.finish(name, into: queue.failed, record: record.encoded(), suffix: ".error.json") }
            logger.error("failed \(name) after \(job.attempt) attempt(s): \(result.error ?? "unknown error")")
            state.withLock { $0.statistics.failed += 1 }
        }
    }

    /// Pauses new claims while the storage is full, and resumes them once a job gets through.
    ///
    /// Each job that finds the storage full is retried like any transient failure, but claiming more
    /// would only fill the claim area with jobs that cannot finish: the pause doubles with each such
    /// failure in a row, up to the retry policy's longest delay. Logged once per episode, not per job.
    private func noteStorage(_ result: JobResult) {
        enum Change { case none, paused(Duration), resumed }
        let change = state.withLock { state -> Change in
            if result.status == .done {
                guard state.fullStorage != nil else { return .none }
                state.fullStorage = nil
                return .resumed
            }
            guard result.errorCode == .storageFull else { return .none }
            let streak = (state.fullStorage?.streak ?? 0) + 1
            let pause = min(configuration.retry.maxDelay, configuration.fullStoragePause * (1 << min(30, streak - 1)))
            state.fullStorage = (streak, ContinuousClock.now + pause)
            return streak == 1 ? .paused(pause) : .none
        }
        switch change {
        case .none: break
        case .paused(let pause):
            logger.warning("storage is full: no new claims for \(pause.formattedSeconds), longer while it stays full; jobs held retry as usual. \(result.error ?? "")")
        case .resumed:
            logger.notice("storage takes objects again: claiming resumed")
        }
    }

    /// Runs a finishing move and forgets the job; a job whose original cannot be moved stays in the
    /// claim area and returns to the inbox when this worker restarts.
    private func finish(_ name: String, _ move: () throws(ImagePipeError) -> String) {
        do {
            _ = try move()
        } catch {
            logger.error("cannot finish \(name): \(error.reason); it stays claimed until this worker restarts")
        }
        forget(name)
    }

    private func returnToInbox(_ name: String) {
        do {
            try area.returnToInbox(name)
        } catch {
            logger.error("cannot return \(name) to the inbox: \(error.reason)")
        }
        forget(name)
    }

    private func forget(_ name: String) {
        let again = state.withLock { state -> QueueDirectory.Entry? in
            state.jobs[name] = nil
            state.history[name] = nil
            return state.busy.removeValue(forKey: name)
        }
        // A second delivery under the same name waited for this one to leave the claim area.
        if let again { enqueue([again]) }
        wakeup.signal()
    }

    // MARK: - Status

    private func logStatus() {
        let statistics = self.statistics
        let rate = state.withLock { state -> Double in
            let now = ContinuousClock.now
            let finished = state.statistics.done + state.statistics.failed
            let seconds = (now - state.lastStatus.at).timeInterval
            defer { state.lastStatus = (now, finished) }
            return seconds > 0 ? Double(finished - state.lastStatus.finished) / seconds : 0
        }
        let line = "status: \(statistics.waiting) waiting, \(statistics.inFlight) in flight, \(statistics.retrying) retrying, "
            + "\(statistics.done) done, \(statistics.failed) failed, \(String(format: "%.2f", rate)) images/s"
        logger.info("\(line)")
    }
}

/// Lets the watcher's handler reach the worker without a retain cycle.
private final class WeakBox: Sendable {
    private let reference = Mutex<Weak?>(nil)
    private struct Weak { weak var worker: QueueWorker? }

    var worker: QueueWorker? {
        get { reference.withLock { $0?.worker } }
        set { reference.withLock { $0 = Weak(worker: newValue) } }
    }
}
