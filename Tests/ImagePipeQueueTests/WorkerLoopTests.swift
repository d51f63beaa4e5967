import Foundation
import ImagePipe
import ImagePipeQueue
import ImagePipeTestKit
import Logging
import Synchronization
import ImagePipeTestSupport
import Testing

/// The worker loop on an in-memory queue and a manual clock: backoff, pauses, leases and shutdown
/// without waiting for any of them.
@Suite struct WorkerLoopTests {
    @Test func aTransientFailureIsRetriedOnlyOnceItsBackoffHasPassed() async throws {
        let queue = MemoryQueue(jobs: ["a.jpg"])
        let storage = InMemoryStorage(failing: { _, attempt in attempt == 1 ? ImagePipeError(.storageUnavailable, "503") : nil })
        let clock = ManualClock()
        let loop = makeLoop(
            queue, storage: storage, clock: clock, retry: RetryPolicy(maxAttempts: 3, baseDelay: .seconds(60), maxDelay: .seconds(60)))
        let running = Task { try await loop.run() }
        #expect(await until { queue.retries.count == 1 })
        let delay = try #require(queue.retries.first)
        #expect(delay <= .seconds(60))
        // The requeued job is due at once in the memory queue; its delay is the queue's business.
        #expect(await until { queue.completed == ["a.jpg"] })
        #expect(queue.attempts["a.jpg"] == 2)
        loop.beginStopping()
        try await running.value
    }

    @Test func aHeldRetryRunsAgainWhenTheClockReachesItsDelay() async throws {
        let queue = MemoryQueue(jobs: ["a.jpg"], holdsRetries: true)
        let storage = InMemoryStorage(failing: { _, attempt in attempt == 1 ? ImagePipeError(.storageUnavailable, "503") : nil })
        let clock = ManualClock()
        let loop = makeLoop(
            queue, storage: storage, clock: clock,
            retry: RetryPolicy(maxAttempts: 3, baseDelay: .seconds(10), maxDelay: .seconds(10)))
        let running = Task { try await loop.run() }
        #expect(await until { loop.statistics.retrying == 1 })
        let delay = try #require(queue.retries.first)
        #expect(loop.statistics.retrying == 1 && queue.completed.isEmpty)
        clock.advance(by: delay + .milliseconds(1))
        #expect(await until { queue.completed == ["a.jpg"] })
        #expect(storage.objects.count == 3, "every variant stored on the second attempt, after the manual clock passed the backoff")
        loop.beginStopping()
        try await running.value
    }

    @Test func aFullStoragePausesClaimingUntilTheClockEndsThePause() async throws {
        let full = Mutex(true)
        let storage = InMemoryStorage(failing: { _, _ in full.withLock { $0 } ? ImagePipeError(.storageFull, "No space left") : nil })
        let queue = MemoryQueue(jobs: ["first.jpg"], holdsRetries: true)
        let clock = ManualClock()
        var configuration = WorkerLoop.Configuration(
            retry: RetryPolicy(maxAttempts: 20, baseDelay: .seconds(100), maxDelay: .seconds(100)),
            statusInterval: .zero, fullStoragePause: .seconds(30))
        configuration.shutdownTimeout = .seconds(1)
        let loop = makeLoop(queue, storage: storage, clock: clock, configuration: configuration)
        let running = Task { try await loop.run() }
        #expect(await until { loop.statistics.retrying == 1 })
        queue.add(["later.jpg"])
        try await Task.sleep(for: .milliseconds(100))
        #expect(queue.claimedIDs == ["first.jpg"], "nothing claimed while paused")
        full.withLock { $0 = false }
        clock.advance(by: .seconds(31))
        #expect(await until { queue.completed.contains("later.jpg") })
        loop.beginStopping()
        try await running.value
    }

    @Test func aJobWhoseLeaseIsLostHasItsResultDropped() async throws {
        let queue = MemoryQueue(jobs: ["a.jpg"], heartbeat: .seconds(1))
        queue.loseOnHeartbeat = true
        let clock = ManualClock()
        // The job outlasts the heartbeat by far, however slowly a loaded machine gets to it.
        let loop = makeLoop(queue, compressor: ScriptedCompressor(work: .seconds(5)), clock: clock)
        let running = Task { try await loop.run() }
        #expect(await until { loop.statistics.inFlight == 1 && clock.sleeping >= 2 })
        clock.advance(by: .seconds(1))
        #expect(await until { queue.heartbeats > 0 })
        #expect(await until { loop.statistics.inFlight == 0 })
        #expect(queue.completed.isEmpty, "a lost job's result is never handed to the queue")
        loop.beginStopping()
        try await running.value
    }

    @Test func shutdownReleasesWhatDidNotFinishWithinTheTimeout() async throws {
        let queue = MemoryQueue(jobs: ["slow.jpg"])
        let clock = ManualClock()
        var configuration = WorkerLoop.Configuration(statusInterval: .zero)
        configuration.shutdownTimeout = .seconds(30)
        let loop = makeLoop(queue, compressor: ScriptedCompressor(work: .seconds(60)), clock: clock, configuration: configuration)
        let running = Task { try await loop.run() }
        #expect(await until { loop.statistics.inFlight == 1 })
        loop.beginStopping()
        try await Task.sleep(for: .milliseconds(100))
        #expect(queue.released.isEmpty, "waits for the job within the timeout")
        // The shutdown's deadline is set when it starts: move the clock on until it has passed.
        #expect(
            await until {
                clock.advance(by: .seconds(31))
                return queue.released == ["slow.jpg"]
            })
        try await running.value
        #expect(queue.closed)
    }

    // MARK: - Helpers

    @Test func exitWhenEmptyStopsOnlyOnceTheWorkersOwnRetriesAreDone() async throws {
        let queue = MemoryQueue(jobs: ["a.jpg", "b.jpg"], holdsRetries: true)
        let storage = InMemoryStorage(failing: { object, attempt in
            object.key.hasPrefix("a") && attempt == 1 ? ImagePipeError(.storageUnavailable, "503") : nil
        })
        let clock = ManualClock()
        let loop = makeLoop(
            queue, storage: storage, clock: clock,
            configuration: .init(
                retry: RetryPolicy(maxAttempts: 3, baseDelay: .seconds(10), maxDelay: .seconds(10)),
                shutdownTimeout: .seconds(5), statusInterval: .zero, exitWhenEmpty: true))
        let returned = Mutex(false)
        let running = Task {
            try await loop.run()
            returned.withLock { $0 = true }
        }
        #expect(await until { queue.completed == ["b.jpg"] && loop.statistics.retrying == 1 })
        try await Task.sleep(for: .milliseconds(200))
        #expect(!returned.withLock { $0 } && queue.released.isEmpty, "the queue is empty but the worker still holds a.jpg's retry")
        clock.advance(by: .seconds(11))
        try await running.value
        #expect(queue.completed.sorted() == ["a.jpg", "b.jpg"] && queue.released.isEmpty)
    }

    private func makeLoop(
        _ queue: MemoryQueue, compressor: any ImageCompressor = ScriptedCompressor(),
        storage: any StorageRepository = InMemoryStorage(), clock: ManualClock,
        retry: RetryPolicy = .init(), configuration: WorkerLoop.Configuration? = nil,
        observer: (any WorkerObserver)? = nil
    ) -> WorkerLoop {
        let handler = FileHandler(compressor: compressor, storage: storage)
        let pipeline = JobPipeline(handler: handler, configuration: .init(jobs: 1, uploads: 1))
        return WorkerLoop(
            queue: queue, pipeline: pipeline,
            configuration: configuration ?? .init(retry: retry, shutdownTimeout: .seconds(5), statusInterval: .zero),
            clock: clock, observer: observer, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
    }

    @Test func theObserverHearsEachRecordedOutcomeOnceAndEachRetry() async throws {
        let queue = MemoryQueue(jobs: ["a.jpg", "b.jpg", "c.jpg"])
        let storage = InMemoryStorage(failing: { object, attempt in
            object.key.hasPrefix("a-") && attempt == 1 ? ImagePipeError(.storageUnavailable, "503 Slow Down") : nil
        })
        let compressor = ScriptedCompressor(failing: { $0 == "c.jpg" ? ImagePipeError(.corruptImage, "corrupt or truncated image data") : nil })
        let observer = RecordingObserver()
        let loop = makeLoop(
            queue, compressor: compressor, storage: storage, clock: ManualClock(),
            retry: RetryPolicy(maxAttempts: 3, baseDelay: .seconds(60), maxDelay: .seconds(60)), observer: observer)
        let running = Task { try await loop.run() }
        #expect(await until { observer.finished.count == 3 }, "\(observer.finished)")
        let finished = Dictionary(observer.finished.map { ($0.source, $0) }, uniquingKeysWith: { first, _ in first })
        #expect(observer.finished.count == 3 && finished.count == 3, "each job once")
        #expect(finished["a.jpg"]?.status == .done && finished["b.jpg"]?.status == .done)
        #expect(finished["c.jpg"]?.status == .failed && finished["c.jpg"]?.errorCode == .corruptImage)
        #expect(observer.retrying.map(\.source) == ["a.jpg"] && observer.retrying.first?.errorCode == .storageUnavailable)
        loop.beginStopping()
        try await running.value
    }

    @Test func aLoopStuckInAClaimIsNotAliveButADrainingOneIs() async throws {
        let queue = MemoryQueue(jobs: [])
        queue.holdClaims = true
        let clock = ManualClock()
        let loop = makeLoop(queue, clock: clock)
        let running = Task { try await loop.run() }
        #expect(await until { queue.claimsHeld == 1 })
        #expect(loop.isAlive(within: .seconds(30)))
        clock.advance(by: .seconds(31))
        #expect(!loop.isAlive(within: .seconds(30)), "31 s on the loop's clock inside one claim")
        loop.beginStopping()
        #expect(loop.isStopping && loop.isAlive(within: .seconds(30)), "a loop asked to stop is draining, and alive")
        queue.holdClaims = false
        try await running.value
    }

    /// Polls a condition the loop reaches by itself (real work on real threads), not by the clock.
    private func until(_ condition: () -> Bool) async -> Bool {
        for _ in 0..<3000 {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return condition()
    }
}

/// A queue in memory whose jobs are files in a scratch folder, recording what the loop asks of it.
final class MemoryQueue: JobQueue {
    private struct State {
        var waiting: [String] = []
        var claimed: [String] = []
        var completed: [String] = []
        var released: [String] = []
        var retries: [Duration] = []
        var attempts: [String: Int] = [:]
        var heartbeats = 0
        var loseOnHeartbeat = false
        var holdClaims = false
        var claimsHeld = 0
        var closed = false
        var wake: (@Sendable () -> Void)?
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
        for job in jobs { directory.write(job, Data("bytes of \(job)".utf8)) }
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

    func open(wake: @escaping @Sendable () -> Void) async throws(ImagePipeError) {
        state.withLock { $0.wake = wake }
    }

    func claim(upTo limit: Int) async -> [ClaimedJob] {
        if state.withLock({ state in
            if state.holdClaims { state.claimsHeld += 1 }
            return state.holdClaims
        }) {
            while state.withLock({ $0.holdClaims }) { try? await Task.sleep(for: .milliseconds(5)) }
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

    func heartbeat(_ jobs: [ClaimedJob]) async -> Set<String> {
        state.withLock { state in
            state.heartbeats += 1
            return state.loseOnHeartbeat ? Set(jobs.map(\.id)) : []
        }
    }

    func complete(_ job: ClaimedJob, result: JobResult) async -> Settlement {
        state.withLock { $0.completed.append(job.id) }
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

    func discard(_ job: ClaimedJob, record: FailureRecord) async -> Settlement { .recorded }

    func release(_ jobs: [ClaimedJob]) async {
        state.withLock { $0.released += jobs.map(\.id) }
    }

    func waitingCount() async -> Int? { state.withLock { $0.waiting.count } }

    func close() async { state.withLock { $0.closed = true } }
}

/// Records what a worker loop reports.
final class RecordingObserver: WorkerObserver {
    private let state = Mutex<(finished: [JobResult], retrying: [JobResult])>(([], []))

    var finished: [JobResult] { state.withLock { $0.finished } }
    var retrying: [JobResult] { state.withLock { $0.retrying } }

    func jobFinished(_ result: JobResult) { state.withLock { $0.finished.append(result) } }
    func jobRetrying(_ result: JobResult) { state.withLock { $0.retrying.append(result) } }
}
