// Runs jobs through compression and storage on separate bounded queues, with backpressure.
import Dispatch
import Foundation
import Synchronization

/// The concurrent engine of a batch or a worker.
///
/// Compression runs on one ``BoundedQueue`` (``Configuration/jobs`` at once, one per core by
/// default), storage puts on another (``Configuration/uploads`` at once), so encoding the next image
/// overlaps storing the previous one. ``submit(_:completion:)`` blocks its caller while
/// ``Configuration/maxInFlight`` jobs are accepted but not finished: however large the batch, only
/// that many images are in memory, and a queue worker claims new files only as fast as they are done.
public final class JobPipeline: Sendable {
    /// Concurrency limits.
    public struct Configuration: Sendable {
        /// Images compressed at once.
        public var jobs: Int
        /// Objects stored at once.
        public var uploads: Int
        /// Jobs accepted but not finished (decoding, encoded and waiting for storage, or storing).
        public var maxInFlight: Int

        /// Creates limits; `maxInFlight` defaults to twice `jobs` plus `uploads`.
        public init(jobs: Int = ProcessInfo.processInfo.activeProcessorCount, uploads: Int = 4, maxInFlight: Int? = nil) {
            self.jobs = max(1, jobs)
            self.uploads = max(1, uploads)
            self.maxInFlight = max(self.jobs, maxInFlight ?? (2 * self.jobs + self.uploads))
        }
    }

    /// The handler every job goes through.
    public let handler: FileHandler
    /// The limits.
    public let configuration: Configuration
    private let compression: BoundedQueue
    private let storage: BoundedQueue
    private let admission: DispatchSemaphore
    private let group = DispatchGroup()
    private let inFlight = Atomic<Int>(0)

    /// Creates a pipeline around a handler.
    public init(handler: FileHandler, configuration: Configuration = .init()) {
        self.handler = handler
        self.configuration = configuration
        self.compression = BoundedQueue(label: "imagepipe.compression", limit: configuration.jobs, qos: .userInitiated)
        self.storage = BoundedQueue(label: "imagepipe.storage", limit: configuration.uploads, qos: .userInitiated)
        self.admission = DispatchSemaphore(value: configuration.maxInFlight)
    }

    /// Jobs accepted and not yet finished.
    public var jobsInFlight: Int { inFlight.load(ordering: .relaxed) }

    /// Accepts a job, blocking the caller while the pipeline is full; `completion` gets the result on a
    /// pipeline thread once every output is stored or the job has failed.
    public func submit(_ job: Job, completion: @escaping @Sendable (JobResult) -> Void) {
        admission.wait()
        accept(job, completion: completion)
    }

    /// Reserves room for one job, blocking until there is some or the deadline passes; true when reserved.
    ///
    /// A queue worker reserves before it claims a file, so it never holds more claimed jobs than it can
    /// work on. Follow a reservation with ``submitReserved(_:completion:)`` or ``cancelReservation()``.
    public func reserve(timeout: DispatchTime = .distantFuture) -> Bool {
        admission.wait(timeout: timeout) == .success
    }

    /// Gives back a reservation that will not be used.
    public func cancelReservation() {
        admission.signal()
    }

    /// Accepts a job into a slot taken with ``reserve(timeout:)``.
    public func submitReserved(_ job: Job, completion: @escaping @Sendable (JobResult) -> Void) {
        accept(job, completion: completion)
    }

    /// Accepts a job if there is room right now; returns false (and does nothing) when full.
    public func trySubmit(_ job: Job, completion: @escaping @Sendable (JobResult) -> Void) -> Bool {
        guard admission.wait(timeout: .now()) == .success else { return false }
        accept(job, completion: completion)
        return true
    }

    /// Blocks until every accepted job has finished.
    public func waitUntilIdle() {
        group.wait()
    }

    /// Blocks until every accepted job has finished or the deadline passes; true when idle.
    public func waitUntilIdle(timeout: DispatchTime) -> Bool {
        group.wait(timeout: timeout) == .success
    }

    private func accept(_ job: Job, completion: @escaping @Sendable (JobResult) -> Void) {
        group.enter()
        inFlight.add(1, ordering: .relaxed)
        let accepted = ContinuousClock.now
        let finish: @Sendable (JobResult) -> Void = { [self] result in
            completion(result)
            inFlight.subtract(1, ordering: .relaxed)
            admission.signal()
            group.leave()
        }
        compression.async { [self] in
            let prepared = handler.prepare(job, acceptedAt: accepted)
            guard prepared.failure == nil, !prepared.outputs.isEmpty else {
                finish(prepared.finish(stored: [], storeTime: .zero))
                return
            }
            // The collector owns the encoded bytes from here on and lets go of each as it is stored,
            // so nothing holds them once the job's slot is given back.
            let puts = PutCollector(prepared: consume prepared, finish: finish)
            for index in 0..<puts.count {
                storage.async { [handler] in
                    puts.record(index, puts.store(index, with: handler))
                }
            }
        }
    }
}

/// Gathers the outcomes of one job's puts and finishes the job after the last one.
private final class PutCollector: Sendable {
    private struct State {
        var objects: [StorageObject?]
        var outcomes: [Result<StoredObject, ImagePipeError>?]
        var remaining: Int
        var firstStart: ContinuousClock.Instant?
    }
    /// The job with its outputs' bytes taken out (kept in `state.objects` until stored).
    private let prepared: PreparedJob
    private let finish: @Sendable (JobResult) -> Void
    private let state: Mutex<State>

    /// Number of objects to store.
    let count: Int

    init(prepared: consuming PreparedJob, finish: @escaping @Sendable (JobResult) -> Void) {
        let objects = prepared.outputs.map { Optional($0.object) }
        for index in prepared.outputs.indices { prepared.outputs[index].object.body = Data() }
        self.count = objects.count
        self.prepared = prepared
        self.finish = finish
        self.state = Mutex(State(objects: objects, outcomes: Array(repeating: nil, count: objects.count),
                                 remaining: objects.count))
    }

    /// Takes object `index` out of the collector and stores it; its bytes are released on return.
    func store(_ index: Int, with handler: FileHandler) -> Result<StoredObject, ImagePipeError> {
        let object = state.withLock { state -> StorageObject in
            if state.firstStart == nil { state.firstStart = .now }
            defer { state.objects[index] = nil }
            return state.objects[index]!
        }
        return handler.store(object)
    }

    func record(_ index: Int, _ outcome: Result<StoredObject, ImagePipeError>) {
        let complete = state.withLock { state -> (outcomes: [Result<StoredObject, ImagePipeError>], since: ContinuousClock.Instant)? in
            state.outcomes[index] = outcome
            state.remaining -= 1
            guard state.remaining == 0 else { return nil }
            return (state.outcomes.map { $0! }, state.firstStart ?? .now)
        }
        if let complete {
            finish(prepared.finish(stored: complete.outcomes, storeTime: .now - complete.since))
        }
    }
}
