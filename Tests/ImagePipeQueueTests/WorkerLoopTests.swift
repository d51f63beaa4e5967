import Foundation
import ImagePipe
import ImagePipeQueue
import ImagePipeTestKit
import ImagePipeTestSupport
import Logging
import Synchronization
import Testing

/// The worker loop in a service group on an in-memory queue and a manual clock: backoff, pauses,
/// leases, hand-offs and shutdown, without waiting for any of them.
@Suite struct WorkerLoopTests {
    @Test func aTransientFailureIsRetriedOnlyOnceItsBackoffHasPassed() async throws {
        let queue = MemoryQueue(jobs: ["a.jpg"])
        let storage = InMemoryStorage(failing: { _, attempt in attempt == 1 ? ImagePipeError(.storageUnavailable, "503") : nil })
        let clock = ManualClock()
        let loop = makeLoop(
            queue, storage: storage, clock: clock, retry: RetryPolicy(maxAttempts: 3, baseDelay: .seconds(60), maxDelay: .seconds(60)))
        try await RunningWorker.run(loop) { _ in
            #expect(await eventually { queue.retries.count == 1 })
            let delay = try #require(queue.retries.first)
            #expect(delay <= .seconds(60))
            // A store that did not answer pauses claiming for 5 s (the loop's own clock).
            clock.advance(by: .seconds(5))
            // The requeued job is due at once in the memory queue; its delay is the queue's business.
            #expect(await eventually { queue.completed == ["a.jpg"] })
            #expect(queue.attempts["a.jpg"] == 2)
        }
    }

    @Test func aHeldRetryRunsAgainWhenTheClockReachesItsDelay() async throws {
        let queue = MemoryQueue(jobs: ["a.jpg"], holdsRetries: true)
        let storage = InMemoryStorage(failing: { _, attempt in attempt == 1 ? ImagePipeError(.storageUnavailable, "503") : nil })
        let clock = ManualClock()
        let loop = makeLoop(
            queue, storage: storage, clock: clock, retry: RetryPolicy(maxAttempts: 3, baseDelay: .seconds(10), maxDelay: .seconds(10)))
        try await RunningWorker.run(loop) { worker in
            #expect(await eventually { worker.statistics.retrying == 1 })
            let delay = try #require(queue.retries.first)
            #expect(queue.completed.isEmpty)
            clock.advance(by: delay + .milliseconds(1))
            #expect(await eventually { queue.completed == ["a.jpg"] })
            #expect(storage.objects.count == 3, "every variant stored on the second attempt, after the manual clock passed the backoff")
        }
    }

    @Test func aFullStoragePausesClaimingUntilTheClockEndsThePause() async throws {
        let full = Mutex(true)
        let storage = InMemoryStorage(failing: { _, _ in full.withLock { $0 } ? ImagePipeError(.storageFull, "No space left") : nil })
        let queue = MemoryQueue(jobs: ["first.jpg"], holdsRetries: true)
        let clock = ManualClock()
        let configuration = WorkerLoop.Configuration(
            retry: RetryPolicy(maxAttempts: 20, baseDelay: .seconds(100), maxDelay: .seconds(100)),
            statusInterval: .zero, fullStoragePause: .seconds(30))
        let loop = makeLoop(queue, storage: storage, clock: clock, configuration: configuration)
        try await RunningWorker.run(loop) { worker in
            #expect(await eventually { worker.statistics.retrying == 1 })
            let looks = worker.statistics.looks
            // New work wakes the loop, which looks and, paused, claims nothing.
            queue.add(["later.jpg"])
            #expect(await eventually { worker.statistics.looks > looks })
            #expect(queue.claimedIDs == ["first.jpg"], "nothing claimed while paused")
            full.withLock { $0 = false }
            clock.advance(by: .seconds(31))
            #expect(await eventually { queue.completed.contains("later.jpg") })
        }
    }

    @Test func aJobWhoseLeaseIsLostHasItsResultDropped() async throws {
        let queue = MemoryQueue(jobs: ["a.jpg"], heartbeat: .seconds(1))
        queue.loseOnHeartbeat = true
        let clock = ManualClock()
        // The job outlasts the heartbeat by far, however slowly a loaded machine gets to it.
        let loop = makeLoop(queue, compressor: ScriptedCompressor(work: .seconds(5)), clock: clock)
        try await RunningWorker.run(loop) { worker in
            // The heartbeat's timer is asleep (the loop's other timers wait far longer).
            #expect(await eventually { worker.statistics.inFlight == 1 && clock.sleepers(dueWithin: .seconds(1)) >= 1 })
            clock.advance(by: .seconds(1))
            #expect(await eventually { queue.heartbeats > 0 })
            #expect(await eventually { worker.statistics.inFlight == 0 })
            #expect(queue.completed.isEmpty, "a lost job's result is never handed to the queue")
        }
    }

    @Test func cancellationReleasesWhatIsStillRunning() async throws {
        let queue = MemoryQueue(jobs: ["slow.jpg"])
        let loop = makeLoop(queue, compressor: ScriptedCompressor(work: .seconds(60)), clock: ManualClock())
        try await RunningWorker.run(loop) { worker in
            #expect(await eventually { worker.statistics.inFlight == 1 })
            worker.beginShutdown()
            #expect(await eventually { loop.isStopping })
            #expect(queue.released.isEmpty, "a graceful shutdown waits for the job")
            // Past its deadline the service group cancels the worker: what still runs goes back.
            worker.running.cancel()
            _ = try? await worker.running.value
            #expect(queue.released == ["slow.jpg"])
            #expect(queue.closed)
        }
    }

    @Test func exitWhenEmptyStopsOnlyOnceTheWorkersOwnRetriesAreDone() async throws {
        let queue = MemoryQueue(jobs: ["a.jpg", "b.jpg"], holdsRetries: true)
        let storage = InMemoryStorage(failing: { object, attempt in
            object.key.hasPrefix("a") && attempt == 1 ? ImagePipeError(.storageUnavailable, "503") : nil
        })
        let clock = ManualClock()
        let loop = makeLoop(
            queue, storage: storage, clock: clock,
            configuration: .init(
                retry: RetryPolicy(maxAttempts: 3, baseDelay: .seconds(10), maxDelay: .seconds(10)), statusInterval: .zero,
                exitWhenEmpty: true))
        try await RunningWorker.run(loop) { worker in
            #expect(await eventually { queue.completed == ["b.jpg"] && worker.statistics.retrying == 1 })
            clock.advance(by: .seconds(11))
            // It stops by itself, and the group with it.
            try await worker.running.value
            #expect(queue.completed.sorted() == ["a.jpg", "b.jpg"] && queue.released.isEmpty)
        }
    }

    @Test func theObserverHearsEachRecordedOutcomeOnceAndEachRetry() async throws {
        let queue = MemoryQueue(jobs: ["a.jpg", "b.jpg", "c.jpg"])
        let storage = InMemoryStorage(failing: { object, attempt in
            object.key.hasPrefix("a-") && attempt == 1 ? ImagePipeError(.storageUnavailable, "503 Slow Down") : nil
        })
        let compressor = ScriptedCompressor(failing: { $0 == "c.jpg" ? ImagePipeError(.corruptImage, "corrupt or truncated image data") : nil })
        let observer = RecordingObserver()
        // No pause of claiming after the store's failure: what is heard, not when, is the point here.
        let retry = RetryPolicy(maxAttempts: 3, baseDelay: .seconds(60), maxDelay: .seconds(60))
        let loop = makeLoop(
            queue, compressor: compressor, storage: storage,
            configuration: .init(retry: retry, statusInterval: .zero, fullStoragePause: .zero), observer: observer)
        try await RunningWorker.run(loop) { worker in
            #expect(await eventually { observer.finished.count == 3 }, "\(observer.finished)")
            let finished = Dictionary(observer.finished.map { ($0.source, $0) }, uniquingKeysWith: { first, _ in first })
            #expect(observer.finished.count == 3 && finished.count == 3, "each job once")
            #expect(finished["a.jpg"]?.status == .done && finished["b.jpg"]?.status == .done)
            #expect(finished["c.jpg"]?.status == .failed && finished["c.jpg"]?.errorCode == .corruptImage)
            #expect(observer.retrying.map(\.source) == ["a.jpg"] && observer.retrying.first?.errorCode == .storageUnavailable)
            #expect(await eventually { worker.statistics.done == 2 && worker.statistics.failed == 1 })
        }
        #expect(queue.discarded == ["c.jpg"])
    }

    @Test func aLoopStuckInAClaimIsNotAliveButADrainingOneIs() async throws {
        let queue = MemoryQueue(jobs: [])
        queue.holdClaims = true
        let clock = ManualClock()
        let loop = makeLoop(queue, clock: clock)
        try await RunningWorker.run(loop) { worker in
            #expect(await eventually { queue.claimsHeld == 1 })
            #expect(loop.isAlive(within: .seconds(30)))
            clock.advance(by: .seconds(31))
            #expect(!loop.isAlive(within: .seconds(30)), "31 s on the loop's clock inside one claim")
            worker.beginShutdown()
            #expect(await eventually { loop.isStopping })
            #expect(loop.isAlive(within: .seconds(30)), "a loop asked to stop is draining, and alive")
            queue.holdClaims = false
        }
    }

    @Test func jobsWaitingForTheirOutputsToBeDurableLetTheWorkerClaimMoreUpToTheHoldLimit() async throws {
        let queue = MemoryQueue(jobs: (1...40).map { "\($0).jpg" })
        let storage = DeferredStorage()
        let loop = makeLoop(queue, storage: storage)
        let limit = loop.pipeline.capacity.limits.holdLimit
        #expect(limit == loop.pipeline.capacity.limits.room + 6)
        try await RunningWorker.run(loop) { worker in
            // Every put waits, so no job is recorded, yet the worker goes on past its pipeline's
            // room, up to its hold limit.
            #expect(await eventually { queue.claimedIDs.count == limit && storage.waiting == 3 * limit })
            let looks = worker.statistics.looks
            queue.add(["more.jpg"])
            #expect(await eventually { worker.statistics.looks > looks }, "the new work woke the loop")
            #expect(queue.claimedIDs.count == limit, "and it claimed nothing more")
            #expect(queue.completed.isEmpty, "no job recorded before its outputs are")
            // Reported, they are recorded and the rest of the queue follows.
            #expect(
                await eventually {
                    storage.reportAll()
                    return queue.completed.count == 41
                })
        }
    }

    @Test func dueRetriesWaitForRoomWithoutSpinning() async throws {
        // Nine handed-off jobs fail at once; their retries come due together, three times the
        // pipeline's room, and each takes a while to compress. The loop runs what fits and waits
        // for room for the rest, woken as it comes back, instead of looking again and again.
        let queue = MemoryQueue(jobs: (1...9).map { "\($0).jpg" }, holdsRetries: true)
        let storage = DeferredStorage()
        let clock = ManualClock()
        let loop = makeLoop(
            queue, compressor: ScriptedCompressor(work: .milliseconds(100)), storage: storage, clock: clock,
            retry: RetryPolicy(maxAttempts: 5, baseDelay: .seconds(3600), maxDelay: .seconds(3600)))
        try await RunningWorker.run(loop) { worker in
            #expect(await eventually { queue.claimedIDs.count == 9 && storage.waiting == 27 })
            storage.reportAll(failing: { _ in ImagePipeError(.storageUnavailable, "fsync: Input/output error") })
            #expect(await eventually { worker.statistics.retrying == 9 })
            let looks = worker.statistics.looks
            clock.advance(by: .seconds(7200))
            #expect(await eventually { storage.waiting == 27 }, "every retry ran")
            #expect(worker.statistics.looks - looks < 100, "the loop looked \(worker.statistics.looks - looks) times while retries waited for room")
            #expect(
                await eventually {
                    storage.reportAll()
                    return queue.completed.count == 9
                })
        }
    }

    private func makeLoop(
        _ queue: MemoryQueue, compressor: any ImageCompressor = ScriptedCompressor(),
        storage: any StorageRepository = InMemoryStorage(), clock: ManualClock = ManualClock(),
        retry: RetryPolicy = .init(), configuration: WorkerLoop.Configuration? = nil,
        observer: (any WorkerObserver)? = nil
    ) -> WorkerLoop {
        let handler = FileHandler(compressor: compressor, storage: storage)
        let pipeline = JobPipeline(handler: handler, limits: .init(jobs: 1, uploads: 1, handedOff: 6))
        return WorkerLoop(
            queue: queue, pipeline: pipeline,
            configuration: configuration ?? .init(retry: retry, statusInterval: .zero),
            clock: clock, observer: observer, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
    }
}

/// A queue in memory whose jobs are files in a scratch folder, recording what the loop asks of it.
final class MemoryQueue: JobQueue, NoticeStore {
    private struct State {
        var waiting: [String] = []
        var claimed: [String] = []
        var completed: [String] = []
        var released: [String] = []
        var discarded: [String] = []
        var retries: [Duration] = []
        var attempts: [String: Int] = [:]
        var heartbeats = 0
        var loseOnHeartbeat = false
        var holdClaims = false
        var claimsHeld = 0
        var closed = false
        var wake: (@Sendable () -> Void)?
        /// Notices kept with their records, by id, until forgotten.
        var kept: [String: JobNotice] = [:]
        /// Notices a stopped worker left, handed to the next one that asks.
        var orphans: [JobNotice] = []
        var left: [String] = []
    }

    private let state = Mutex(State())
    private let directory = TemporaryDirectory(prefix: "imagepipe-memory-queue")
    private let holdsRetries: Bool
    let heartbeatInterval: Duration?

    init(jobs: [String], holdsRetries: Bool = false, heartbeat: Duration? = nil) {
        self.holdsRetries = holdsRetries
        self.heartbeatInterval = heartbeat
        add(jobs)
    }

    func add(_ jobs: [String]) {
        for job in jobs { directory.write(job, ScriptedCompressor.image("bytes of \(job)")) }
        let wake = state.withLock { state in
            state.waiting += jobs
            return state.wake
        }
        wake?()
    }

    var displayName: String { "memory" }
    var releasePlace: String { "queue" }
    var pollInterval: Duration { .seconds(3600) }
    var maintenanceInterval: Duration { .seconds(3600) }

    var completed: [String] { state.withLock { $0.completed } }
    var released: [String] { state.withLock { $0.released } }
    var discarded: [String] { state.withLock { $0.discarded } }
    var retries: [Duration] { state.withLock { $0.retries } }
    var claimedIDs: [String] { state.withLock { $0.claimed } }
    var attempts: [String: Int] { state.withLock { $0.attempts } }
    var heartbeats: Int { state.withLock { $0.heartbeats } }
    var closed: Bool { state.withLock { $0.closed } }
    var loseOnHeartbeat: Bool {
        get { state.withLock { $0.loseOnHeartbeat } }
        set { state.withLock { $0.loseOnHeartbeat = newValue } }
    }
    /// While true, a claim does not return (a queue that hangs); ``claimsHeld`` counts the claims kept waiting.
    var holdClaims: Bool {
        get { state.withLock { $0.holdClaims } }
        set { state.withLock { $0.holdClaims = newValue } }
    }
    var claimsHeld: Int { state.withLock { $0.claimsHeld } }

    func open(signals: QueueSignals) async throws(ImagePipeError) {
        state.withLock { $0.wake = signals.wake }
    }

    func claim(upTo limit: Int) async -> [ClaimedJob] {
        if state.withLock({ state in
            if state.holdClaims { state.claimsHeld += 1 }
            return state.holdClaims
        }) {
            // Held until the test lets go, or a minute: a test that failed before letting go ends
            // instead of leaving its worker's claim, and so the suite, waiting for ever.
            let deadline = ContinuousClock.now + .seconds(60)
            while state.withLock({ $0.holdClaims }), ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(5)) }
        }
        let names = state.withLock { state -> [(String, Int)] in
            let names = Array(state.waiting.prefix(limit))
            state.waiting.removeFirst(names.count)
            return names.map { name in
                state.claimed.append(name)
                state.attempts[name, default: 0] += 1
                return (name, state.attempts[name]!)
            }
        }
        return names.map { ClaimedJob(id: $0, job: Job(path: directory.url($0), relativePath: $0, attempt: $1)) }
    }

    func maintain() async {}

    func heartbeat(_ jobs: [ClaimedJob]) async -> HeartbeatOutcome {
        state.withLock { state in
            state.heartbeats += 1
            return HeartbeatOutcome(lost: state.loseOnHeartbeat ? Set(jobs.map(\.id)) : [])
        }
    }

    func complete(_ job: ClaimedJob, result: JobResult, notice: JobNotice?) async -> Settlement {
        state.withLock { state in
            state.completed.append(job.id)
            if let notice { state.kept[notice.id] = notice }
        }
        return .recorded
    }

    func retry(_ job: ClaimedJob, failure: AttemptRecord, after delay: Duration) async -> RetryDisposition {
        let wake = state.withLock { state in
            state.retries.append(delay)
            if !holdsRetries { state.waiting.append(job.id) }
            return state.wake
        }
        if holdsRetries { return .keepHolding }
        wake?()
        return .requeued
    }

    func discard(_ job: ClaimedJob, failure: AttemptRecord, result: JobResult, notice: JobNotice?) async -> Settlement {
        state.withLock { state in
            state.discarded.append(job.id)
            if let notice { state.kept[notice.id] = notice }
        }
        return .recorded
    }

    /// Notices kept and not yet forgotten.
    var kept: [String: JobNotice] { state.withLock { $0.kept } }
    /// The ids the worker left undelivered when it stopped.
    var left: [String] { state.withLock { $0.left } }
    /// Notices a worker that died left, for the next one.
    func leaveOrphans(_ notices: [JobNotice]) {
        state.withLock { state in
            state.orphans += notices
            for notice in notices { state.kept[notice.id] = notice }
        }
    }

    var notices: (any NoticeStore)? { self }

    func takeOver(limit: Int) async -> [JobNotice] {
        state.withLock { state in
            let taken = Array(state.orphans.prefix(limit))
            state.orphans.removeFirst(taken.count)
            return taken
        }
    }

    func forget(_ ids: [String]) async { state.withLock { state in for id in ids { state.kept[id] = nil } } }

    func leave(_ ids: [String]) async { state.withLock { $0.left += ids } }

    func hold(for duration: Duration) async {}

    func release(_ jobs: [ClaimedJob]) async {
        state.withLock { $0.released += jobs.map(\.id) }
    }

    func waitingCount() async -> Int? { state.withLock { $0.waiting.count } }

    func close() async { state.withLock { $0.closed = true } }
}

/// Records what a worker loop reports.
final class RecordingObserver: WorkerObserver {
    private let state = Mutex<(finished: [JobResult], retrying: [JobResult], cancelled: [JobResult])>(([], [], []))

    var finished: [JobResult] { state.withLock { $0.finished } }
    var retrying: [JobResult] { state.withLock { $0.retrying } }
    var cancelled: [JobResult] { state.withLock { $0.cancelled } }

    func jobFinished(_ result: JobResult) { state.withLock { $0.finished.append(result) } }
    func jobCancelled(_ result: JobResult) { state.withLock { $0.cancelled.append(result) } }
    func jobRetrying(_ result: JobResult) { state.withLock { $0.retrying.append(result) } }
}
