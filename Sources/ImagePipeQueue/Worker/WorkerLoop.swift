// The worker loop over any JobQueue: claims as the pipeline has room, settles each result, drains on shutdown.
import Foundation
public import ImagePipe
public import Logging
public import ServiceLifecycle
import Synchronization

/// Runs the jobs of a ``JobQueue`` through a ``JobPipeline``, as a swift-service-lifecycle `Service`.
///
/// `run()` opens the queue and claims jobs, but only after reserving room in the pipeline, so a
/// worker never claims more jobs than it can work on; it goes on claiming while finished jobs only
/// wait for their outputs' fsyncs (see ``ClaimPolicy``). Each result is settled through the
/// queue: completed, retried after a backoff, discarded, or (while stopping) given back. Timers
/// (status line, queue upkeep) end on graceful shutdown; lease renewals run on a thread of their
/// own until the last job is settled. Time comes from a ``WorkerClock``, so tests move it by hand. On graceful shutdown the loop stops claiming, lets jobs in
/// flight finish within the shutdown timeout, releases the rest and returns.
public final class WorkerLoop: Service, Sendable {
    /// Loop settings.
    public struct Configuration: Sendable {
        /// Retries of transient failures.
        public var retry: RetryPolicy
        /// How long in-flight jobs may run after a shutdown request before they are given back.
        public var shutdownTimeout: Duration
        /// How often a status line is logged; zero for never.
        public var statusInterval: Duration
        /// How long claiming pauses after a job finds the storage full; the pause doubles while the
        /// storage stays full, up to the retry policy's longest delay.
        public var fullStoragePause: Duration
        /// Stop (as on a graceful shutdown) once this worker holds no job and none is waiting in the
        /// queue: a backlog worked off by a cron job or a benchmark. Jobs other workers are running
        /// stay theirs to finish.
        public var exitWhenEmpty: Bool

        /// Creates settings: 5 attempts, 30 s shutdown timeout, status every 30 s, a 5 s first pause
        /// when the storage is full, running until stopped.
        public init(
            retry: RetryPolicy = .init(), shutdownTimeout: Duration = .seconds(30),
            statusInterval: Duration = .seconds(30), fullStoragePause: Duration = .seconds(5),
            exitWhenEmpty: Bool = false
        ) {
            self.retry = retry
            self.shutdownTimeout = shutdownTimeout
            self.statusInterval = statusInterval
            self.fullStoragePause = fullStoragePause
            self.exitWhenEmpty = exitWhenEmpty
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
        /// Jobs recorded as failed for good.
        public var failed = 0
        /// Rounds of queue upkeep finished (a queue directory's rescan, PostgreSQL's take-back of
        /// expired leases): what a test waits for to know the queue was looked at again.
        public var upkeeps = 0
    }

    enum Phase: Equatable {
        case inFlight
        /// The result is being recorded; a shutdown waits for it rather than releasing the job.
        case settling
        case waitingRetry(until: ContinuousClock.Instant)
    }

    struct Held {
        var claimed: ClaimedJob
        var phase: Phase
        /// A heartbeat found the claim taken by another worker: the result will be dropped.
        var lost = false
        /// Its outputs were handed to the store and only wait to be made durable: it holds no
        /// pipeline room and no image data, only its claim, until a result says otherwise.
        var handedOff = false
    }

    struct State: ~Copyable {
        var held: [String: Held] = [:]
        var abandoned: Set<String> = []
        var claims: ClaimPolicy
        var status: StatusReport
        /// When the claim loop last looked for work (or the loop was made), for liveness.
        var lastLook: ContinuousClock.Instant
        /// How many times the claim loop has looked.
        var looks = 0
        var upkeeps = 0
        var stopping = false
        var stoppingNow = false
        var opened = false
        var openWaiters: [CheckedContinuation<Void, Never>] = []
    }

    /// A result handed from a pipeline thread to the loop.
    struct Finished: Sendable {
        let id: String
        let result: JobResult
    }

    /// The queue.
    public let queue: any JobQueue
    /// The pipeline jobs run through.
    public let pipeline: JobPipeline
    /// The settings.
    public let configuration: Configuration
    let logger: Logger
    let observer: (any WorkerObserver)?
    let clock: any WorkerClock
    let finishing: FinishPolicy
    let state: Mutex<State>
    /// Wakes the claim loop: new work, room in the pipeline, a stop.
    let wakeup = Wakeup()
    /// Wakes a shutdown waiting for jobs in flight: a job settled, or a stop at once.
    let drainWakeup = Wakeup()
    /// End the timers when the loop stops.
    let statusTimer = Wakeup(), maintenanceTimer = Wakeup()
    let results: AsyncStream<Finished>
    let resultsInput: AsyncStream<Finished>.Continuation

    /// Creates a loop; `clock` is the real one unless a test drives time; `observer` hears of every
    /// recorded outcome and retry.
    public init(
        queue: any JobQueue, pipeline: JobPipeline, configuration: Configuration = .init(),
        clock: any WorkerClock = SystemClock(), observer: (any WorkerObserver)? = nil,
        logger: Logger = Logger(label: "imagepipe.queue")
    ) {
        self.queue = queue
        self.pipeline = pipeline
        self.configuration = configuration
        self.clock = clock
        self.observer = observer
        self.logger = logger
        self.finishing = FinishPolicy(retry: configuration.retry)
        self.state = Mutex(
            State(
                claims: ClaimPolicy(
                    pipelineRoom: pipeline.configuration.maxInFlight, firstPause: configuration.fullStoragePause,
                    longestPause: configuration.retry.maxDelay),
                status: StatusReport(startedAt: clock.now), lastLook: clock.now))
        (results, resultsInput) = AsyncStream.makeStream(of: Finished.self)
    }

    /// How many times the claim loop has looked for work: a loop that spins shows here.
    var claimLooks: Int { state.withLock { $0.looks } }

    /// A snapshot of the counters.
    public var statistics: Statistics {
        state.withLock { state in
            var statistics = Statistics(done: state.status.done, failed: state.status.failed, upkeeps: state.upkeeps)
            for held in state.held.values {
                if case .waitingRetry = held.phase { statistics.retrying += 1 } else { statistics.inFlight += 1 }
            }
            return statistics
        }
    }

    public func run() async throws {
        try await queue.open(wake: { [wakeup] in wakeup.signal() })
        let waiters = state.withLock { state in
            state.opened = true
            defer { state.openWaiters.removeAll() }
            return state.openWaiters
        }
        for waiter in waiters { waiter.resume() }

        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                await withDiscardingTaskGroup { group in
                    group.addTask { await self.settleResults() }
                    if configuration.statusInterval > .zero {
                        group.addTask {
                            await self.repeatUntilShutdown(every: self.configuration.statusInterval, stop: self.statusTimer) {
                                await self.logStatus()
                            }
                        }
                    }
                    group.addTask {
                        await self.repeatUntilShutdown(every: self.queue.maintenanceInterval, stop: self.maintenanceTimer) {
                            await self.queue.maintain()
                            self.state.withLock { $0.upkeeps += 1 }
                        }
                    }
                    if let interval = queue.heartbeatInterval {
                        group.addTask(executorPreference: DedicatedThread.heartbeats) { await self.renewLeases(every: interval) }
                    }
                    await claimLoop()
                    await drain()
                    // Every job is settled or given back: what is left are timers and heartbeats.
                    group.cancelAll()
                }
            } onGracefulShutdown: {
                self.beginStopping()
            }
        } onCancel: {
            self.stopNow()
        }
        resultsInput.finish()
        await logStatus()
        await queue.close()
        logger.notice("stopped")
    }

    /// Whether the loop is alive: its claim loop looked for work within `window` (it looks at least
    /// once per ``JobQueue/pollInterval`` unless a claim hangs), or it is stopping and draining.
    public func isAlive(within window: Duration) -> Bool {
        let now = clock.now
        return state.withLock { state in state.stopping || now - state.lastLook <= window }
    }

    /// Whether a stop was asked for (graceful or at once): no new claims.
    public var isStopping: Bool { state.withLock { $0.stopping } }

    /// Suspends until the queue is open and jobs are being claimed.
    public func waitUntilOpened() async {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                if state.opened { return true }
                state.openWaiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Runs `action` every `interval` until the loop stops (a graceful shutdown, or cancellation).
    ///
    /// `stop` is signalled by ``beginStopping()``, which the graceful-shutdown handler calls, so the
    /// timer ends at once rather than at its next tick. ServiceLifecycle's `cancelWhenGracefulShutdown`
    /// would do the same through an actor, which needs Swift's cooperative pool: a loop driven by
    /// blocking callers (``QueueWorker``) must not depend on it.
    private func repeatUntilShutdown(every interval: Duration, stop: Wakeup, _ action: @Sendable () async -> Void) async {
        while !Task.isCancelled {
            await stop.wait(until: clock.now + interval, on: clock)
            if Task.isCancelled || state.withLock({ $0.stopping }) { return }
            await action()
        }
    }

    private func logStatus() async {
        let waiting = await queue.waitingCount()
        let statistics = self.statistics
        let now = clock.now
        let fields = state.withLock { state in
            state.status.fields(waiting: waiting, inFlight: statistics.inFlight, retrying: statistics.retrying, at: now)
        }
        logger.info("status", metadata: fields)
    }
}
