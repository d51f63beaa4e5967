// The worker loop over any JobQueue: a state machine decides, this thin executor does the I/O, inside a ServiceGroup.
import Foundation
public import ImagePipe
public import Logging
public import ServiceLifecycle
import Synchronization

/// Runs the jobs of a ``JobQueue`` through a ``JobPipeline``, as a swift-service-lifecycle `Service`.
///
/// Every decision is the ``WorkerStateMachine``'s: how much to claim, when a retry runs, what a
/// result leads to, what a shutdown gives back. This type feeds it events, one task taking them in
/// order from every source (pipeline threads, the queue's wake-ups, timers, I/O tasks), and carries
/// out its actions: claims, settlements, releases and heartbeats each run as a task of their own
/// and report back. Nothing here blocks the cooperative pool; blocking queue work goes through
/// ``BlockingIO`` inside the queue.
///
/// A graceful shutdown stops claiming and lets jobs in flight finish; the service group's
/// `maximumGracefulShutdownDuration` bounds that wait by cancelling the service, which gives the
/// jobs still running back to the queue (as does ``stopNow()``, a second signal). Status and
/// upkeep timers end at graceful shutdown; heartbeats go on until the last job is settled.
public final class WorkerLoop: Service, Sendable {
    /// Loop settings.
    public struct Configuration: Sendable {
        /// Retries of transient failures.
        public var retry: RetryPolicy
        /// How often a status line is logged; zero for never.
        public var statusInterval: Duration
        /// How long claiming pauses after a job finds the storage full; the pause doubles while the
        /// storage stays full, up to the retry policy's longest delay.
        public var fullStoragePause: Duration
        /// Stop (as on a graceful shutdown) once this worker holds no job, none is due within the
        /// retry policy's longest backoff, and no job another worker holds may come back (see
        /// ``JobQueue/remainder(dueWithin:)``): a backlog worked off by a cron job or a benchmark.
        /// Jobs live workers are running stay theirs to finish.
        public var exitWhenEmpty: Bool
        /// The stop's time limit (`--shutdown-timeout`): once the jobs are settled, notifications
        /// still going out get what is left of it after the stop request (all of it when the loop
        /// ended by itself); the queue keeps those still undelivered for the next worker.
        public var shutdownTimeout: Duration

        /// Creates settings: 5 attempts, status every 30 s, a 5 s first pause when the storage is
        /// full, running until stopped, 30 s to stop.
        public init(
            retry: RetryPolicy = .init(), statusInterval: Duration = .seconds(30), fullStoragePause: Duration = .seconds(5),
            exitWhenEmpty: Bool = false, shutdownTimeout: Duration = .seconds(30)
        ) {
            self.retry = retry
            self.statusInterval = statusInterval
            self.fullStoragePause = fullStoragePause
            self.exitWhenEmpty = exitWhenEmpty
            self.shutdownTimeout = shutdownTimeout
        }
    }

    /// Counts since start.
    public struct Statistics: Sendable, Equatable {
        /// Claimed jobs in the pipeline (or being settled).
        public var inFlight = 0
        /// Jobs this worker holds, waiting for a retry.
        public var retrying = 0
        /// Jobs recorded as done.
        public var done = 0
        /// Jobs recorded as failed for good (`failed`, as `queue status` calls them).
        public var failed = 0
        /// Jobs recorded as cancelled.
        public var cancelled = 0
        /// Rounds of queue upkeep finished (a queue directory's rescan, PostgreSQL's take-back of
        /// expired leases): what a test waits for to know the queue was looked at again.
        public var upkeeps = 0
        /// How many times the loop looked for work: a loop that spins shows here.
        public var looks = 0
    }

    /// What monitoring and tests read while the loop runs, copied from the state machine after each batch of events.
    struct Snapshot {
        var statistics = Statistics()
        var lastLook: ContinuousClock.Instant
        var claimStartedAt: ContinuousClock.Instant?
        var stopping = false
    }

    typealias Machine = WorkerStateMachine

    /// The queue.
    public let queue: any JobQueue
    /// The pipeline jobs run through.
    public let pipeline: JobPipeline
    /// The settings.
    public let configuration: Configuration
    let logger: Logger
    let observer: (any WorkerObserver)?
    /// Told of every recorded outcome after the observer (`--notify-url`).
    let notifier: (any JobNotifier)?
    let clock: any WorkerClock
    let events = EventChannel<Machine.Event>()
    let snapshot: Mutex<Snapshot>
    let status: Mutex<StatusReport>
    /// The tokens of jobs in the pipeline, by ID.
    let cancellations = Mutex<[String: JobCancellation]>([:])

    /// Creates a loop; `clock` is the real one unless a test drives time; `observer` hears of every
    /// recorded outcome and retry; `notifier` gets a notice of every recorded outcome.
    public init(
        queue: any JobQueue, pipeline: JobPipeline, configuration: Configuration = .init(),
        clock: any WorkerClock = SystemClock(), observer: (any WorkerObserver)? = nil,
        notifier: (any JobNotifier)? = nil, logger: Logger = Logger(label: "imagepipe.queue")
    ) {
        self.notifier = notifier
        self.queue = queue
        self.pipeline = pipeline
        self.configuration = configuration
        self.clock = clock
        self.observer = observer
        self.logger = logger
        self.snapshot = Mutex(Snapshot(lastLook: clock.now))
        self.status = Mutex(StatusReport(startedAt: clock.now))
    }

    /// The state machine's settings: the pipeline's capacity, the queue's poll interval, the
    /// notifier's room.
    var limits: Machine.Limits {
        Machine.Limits(
            capacity: pipeline.capacity.limits, retry: configuration.retry, fullStoragePause: configuration.fullStoragePause,
            pollInterval: queue.pollInterval, exitWhenEmpty: configuration.exitWhenEmpty,
            noticeRoom: notifier?.room, noticeGrace: configuration.shutdownTimeout)
    }

    /// Where the queue keeps notices, when this worker notifies; a queue that keeps none still has
    /// its jobs notified, with nothing to take over.
    var noticeStore: (any NoticeStore)? { notifier == nil ? nil : queue.notices }

    /// A snapshot of the counters.
    public var statistics: Statistics { snapshot.withLock { $0.statistics } }

    /// Whether a stop was asked for (graceful or at once): no new claims.
    public var isStopping: Bool { snapshot.withLock { $0.stopping } }

    /// Whether the loop is alive: it looked for work within `window` and no claim has hung for
    /// longer (it looks at least once per ``JobQueue/pollInterval``), or it is stopping and draining.
    public func isAlive(within window: Duration) -> Bool {
        let now = clock.now
        return snapshot.withLock { snapshot in
            if snapshot.stopping { return true }
            if let claimStartedAt = snapshot.claimStartedAt { return now - claimStartedAt <= window }
            return now - snapshot.lastLook <= window
        }
    }

    /// Stops at once: jobs in flight are not waited for, and they and every job waiting for a retry
    /// are given back. Cuts a graceful shutdown short.
    public func stopNow() {
        events.send(.stopNow(.requested))
    }

    public func run() async throws {
        let room = pipeline.capacity.addRoomListener { [events] in events.send(.roomReturned) }
        defer { pipeline.capacity.removeRoomListener(room) }
        guard try await openQueue() else { return }
        var machine = Machine(limits: limits, now: clock.now)
        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                await withDiscardingTaskGroup { group in
                    startTimers(&group)
                    var batch: [Machine.Event] = [.opened]
                    var alarm: ContinuousClock.Instant?
                    // Not cancelled with the rest: jobs given back, and notices left, must reach
                    // the queue before it closes.
                    var releases: [Task<Void, Never>] = []
                    running: while true {
                        for event in batch {
                            if case .tick(let deadline) = event, deadline == alarm { alarm = nil }
                            for action in machine.handle(event, now: clock.now, available: pipeline.capacity.available) {
                                switch action {
                                case .finish:
                                    break running
                                case .release(let jobs, let reason):
                                    // Jobs refused at their claim took no place.
                                    if reason.freshFromAClaim { pipeline.cancelReservation(jobs.count { $0.refusal == nil }) }
                                    releases.append(Task { await self.release(jobs, reason) })
                                case .leaveNotices(let ids):
                                    releases.append(Task { await self.noticeStore?.leave(ids) })
                                case .holdNotices(let duration):
                                    releases.append(Task { await self.noticeStore?.hold(for: duration) })
                                default:
                                    perform(action, in: &group, alarm: &alarm)
                                }
                            }
                        }
                        publish(machine)
                        batch = await events.next()
                    }
                    publish(machine)
                    for release in releases { await release.value }
                    // Every job is settled or given back: what is left are timers, heartbeats and
                    // settlements a stop at once no longer waits for.
                    group.cancelAll()
                }
            } onGracefulShutdown: { [events] in
                events.send(.gracefulShutdown)
            }
        } onCancel: { [events] in
            events.send(.stopNow(.cancelled))
        }
        await logStatus()
        // The state machine waited for the notices as long as the stop allowed: the notifier stops.
        _ = await notifier?.finish(within: .zero)
        await queue.close()
        logger.notice("stopped")
    }

    /// Opens the queue; false when a stop came first. Opening waits for a database that cannot be
    /// reached yet, for as long as it takes: a stop (graceful or not) ends that wait at once, since
    /// nothing was claimed and nothing needs giving back.
    private func openQueue() async throws -> Bool {
        let signals = QueueSignals(
            wake: { [events] in events.send(.wake) }, checkClaims: { [events] in events.send(.heartbeatDue) },
            orphans: OrphanRule(maxAttempts: limits.retry.maxAttempts))
        do {
            try await cancelWhenGracefulShutdown { [queue] in try await queue.open(signals: signals) }
            return true
        } catch {
            guard Task.isShuttingDownGracefully || Task.isCancelled else { throw error }
            await queue.close()
            logger.notice("stopped before the queue was open: no job was claimed", metadata: ["queue": "\(queue.displayName)"])
            return false
        }
    }

    /// Copies what monitoring and tests read.
    private func publish(_ machine: borrowing Machine) {
        let statistics = Statistics(
            inFlight: machine.inFlight, retrying: machine.retrying, done: machine.done, failed: machine.failed,
            cancelled: machine.cancelled, looks: machine.looks)
        let (lastLook, claimStartedAt, stopping) = (machine.lastLook, machine.claimStartedAt, machine.isStopping)
        snapshot.withLock { snapshot in
            let upkeeps = snapshot.statistics.upkeeps
            snapshot.statistics = statistics
            snapshot.statistics.upkeeps = upkeeps
            snapshot.lastLook = lastLook
            snapshot.claimStartedAt = claimStartedAt
            snapshot.stopping = stopping
        }
    }

    /// Carries out one action; I/O runs as a task of its own that reports back as an event.
    private func perform(_ action: Machine.Action, in group: inout DiscardingTaskGroup, alarm: inout ContinuousClock.Instant?) {
        switch action {
        case .claim(let count):
            group.addTask { await self.claim(upTo: count) }
        case .submit(let jobs):
            for job in jobs { submit(job) }
        case .rerun(let jobs):
            var deferred: [String] = []
            for job in jobs {
                if pipeline.tryReserve(upTo: 1) == 1 { submit(job) } else { deferred.append(job.id) }
            }
            if !deferred.isEmpty { events.send(.rerunDeferred(deferred)) }
        case .settle(let job, let decision, let result):
            group.addTask { await self.settle(job, decision, result) }
        case .sendNotice(let notice):
            send(notice, in: &group)
        case .offerNotices(let notices):
            offer(notices)
        case .takeOverNotices(let limit):
            group.addTask { self.events.send(.noticesTakenOver(await self.noticeStore?.takeOver(limit: limit) ?? [])) }
        case .forgetNotices(let ids):
            // Stores forget in memory or through BlockingIO, which a cancelled group still waits for.
            group.addTask {
                await self.noticeStore?.forget(ids)
                self.events.send(.noticesForgotten)
            }
        case .release, .leaveNotices, .holdNotices:
            break
        case .renew(let jobs):
            group.addTask {
                let outcome = await self.queue.heartbeat(jobs)
                if !outcome.lost.isEmpty { self.events.send(.leaseLost(outcome.lost)) }
                if !outcome.cancelRequested.isEmpty { self.events.send(.cancelRequested(outcome.cancelRequested)) }
            }
        case .checkEmpty(let horizon):
            group.addTask { self.events.send(.emptyChecked(await self.queue.remainder(dueWithin: horizon))) }
        case .wakeAt(let deadline):
            // One alarm at a time, the earliest asked for; a later one comes with the next look.
            guard alarm.map({ deadline < $0 }) ?? true else { return }
            alarm = deadline
            group.addTask {
                do { try await self.clock.sleep(until: deadline) } catch { return }
                self.events.send(.tick(deadline))
            }
        case .abandon(let ids):
            let tokens = cancellations.withLock { tokens in ids.compactMap { tokens[$0] } }
            for token in tokens { token.cancel() }
        case .withdraw(let ids):
            let tokens = cancellations.withLock { tokens in ids.compactMap { tokens[$0] } }
            for token in tokens { token.withdraw() }
        case .note(let note):
            log(note)
        case .finish:
            break
        }
    }

    /// Reserves up to `count` places, claims that many jobs and reports them; places the queue did
    /// not fill are given back at once.
    private func claim(upTo count: Int) async {
        let reserved = pipeline.tryReserve(upTo: count)
        let start = ContinuousClock.now
        var jobs = reserved > 0 ? await queue.claim(upTo: reserved) : []
        // A traced job's span starts with its claim.
        if pipeline.handler.configuration.tracer != nil {
            let claim = start...ContinuousClock.now
            for index in jobs.indices { jobs[index].job.claimedDuring = claim }
        }
        // A job refused at its claim never runs: its place goes back too.
        pipeline.cancelReservation(reserved - jobs.count { $0.refusal == nil })
        events.send(.claimed(jobs, asked: reserved))
    }

    /// Hands a claimed job to the pipeline, in the place reserved for it, with a token that stops
    /// it at its next safe point should its result no longer be wanted.
    private func submit(_ claimed: ClaimedJob) {
        let id = claimed.id
        var job = claimed.job
        let token = JobCancellation()
        job.cancellation = token
        cancellations.withLock { $0[id] = token }
        pipeline.submit(job) { [self] event in
            switch event {
            case .handedOff: events.send(.handedOff(id))
            case .finished(let result):
                _ = cancellations.withLock { $0.removeValue(forKey: id) }
                events.send(.finished(id, result))
            case .withdrawn:
                _ = cancellations.withLock { $0.removeValue(forKey: id) }
                events.send(.withdrawn(id))
            }
        }
    }
}
