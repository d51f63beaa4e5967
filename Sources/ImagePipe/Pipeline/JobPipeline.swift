// Runs jobs through compression and storage on separate bounded queues, with backpressure.
public import Dispatch
public import Foundation
import Synchronization

/// The concurrent engine of a batch or a worker: it schedules the FileHandler's stages and applies
/// backpressure; the handler does the work.
///
/// Each job's inspection (read, hash, destination lookups) and its puts run on one ``BoundedQueue``
/// (``Configuration/uploads`` at once), its compression on another (``Configuration/jobs`` at once,
/// one per core by default), so encoding one image overlaps storing and inspecting others.
/// ``submit(_:completion:)`` blocks its caller while ``Configuration/maxInFlight`` jobs are accepted
/// and still hold image data (inspecting, decoding, encoding, or storing outputs whose bytes the
/// store has not yet taken): however large the batch, only that many images are in memory, and a
/// queue worker claims new files only as fast as they are done. A job whose outputs are written
/// and wait for the store's next round of fsyncs no longer counts; the store bounds those itself.
public final class JobPipeline: Sendable {
    /// Concurrency limits.
    public struct Configuration: Sendable {
        /// Images compressed at once.
        public var jobs: Int
        /// Objects stored (and sources inspected) at once.
        public var uploads: Int
        /// Jobs accepted and holding image data (inspecting, decoding, encoded and waiting for storage,
        /// or storing); jobs whose outputs only wait to be made durable do not count.
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
    private let halted = Mutex<ImagePipeError?>(nil)

    /// Creates a pipeline around a handler.
    public init(handler: FileHandler, configuration: Configuration = .init()) {
        self.handler = handler
        self.configuration = configuration
        self.compression = BoundedQueue(label: "imagepipe.compression", limit: configuration.jobs, qos: .userInitiated)
        self.storage = BoundedQueue(label: "imagepipe.storage", limit: configuration.uploads, qos: .userInitiated)
        self.admission = DispatchSemaphore(value: configuration.maxInFlight)
    }

    /// Jobs accepted and not yet finished; more than ``Configuration/maxInFlight`` while some only
    /// wait for their outputs to be made durable.
    public var jobsInFlight: Int { inFlight.load(ordering: .relaxed) }

    /// Accepts a job, blocking the caller while the pipeline is full; `completion` gets the result on a
    /// pipeline or storage thread once every output is stored or the job has failed.
    public func submit(_ job: Job, completion: @escaping @Sendable (JobResult) -> Void) {
        admission.wait()
        accept(job, completion: completion)
    }

    /// Reserves room for one job, blocking until there is some or the deadline passes; true when reserved.
    ///
    /// A queue worker reserves before it claims a file, so it never claims more jobs than it can
    /// work on. Follow a reservation with ``submitReserved(_:roomReturned:completion:)`` or ``cancelReservation()``.
    public func reserve(timeout: DispatchTime = .distantFuture) -> Bool {
        admission.wait(timeout: timeout) == .success
    }

    /// Gives back a reservation that will not be used.
    public func cancelReservation() {
        admission.signal()
    }

    /// Accepts a job into a slot taken with ``reserve(timeout:)``.
    ///
    /// `roomReturned` is called (on a pipeline thread, after the slot is free) when the job gives
    /// its slot back: `true` when that comes before its result, because its outputs were handed to
    /// the store and only wait to be made durable; `false` when it ended first.
    public func submitReserved(
        _ job: Job, roomReturned: (@Sendable (_ beforeResult: Bool) -> Void)? = nil,
        completion: @escaping @Sendable (JobResult) -> Void
    ) {
        accept(job, roomReturned: roomReturned, completion: completion)
    }

    /// Stops compressing: every job not yet decoded fails with `error` once it has been inspected
    /// (a batch whose destination is full need not decode the rest; those already up to date are
    /// still reported skipped).
    public func halt(_ error: ImagePipeError) {
        halted.withLock { if $0 == nil { $0 = error } }
    }

    /// Blocks until every accepted job has finished.
    public func waitUntilIdle() {
        group.wait()
    }

    /// Blocks until every accepted job has finished or the deadline passes; true when idle.
    public func waitUntilIdle(timeout: DispatchTime) -> Bool {
        group.wait(timeout: timeout) == .success
    }

    private func accept(
        _ job: Job, roomReturned: (@Sendable (Bool) -> Void)? = nil, completion: @escaping @Sendable (JobResult) -> Void
    ) {
        // The group is left twice per job: once when it ends, once when its room is given back.
        group.enter()
        group.enter()
        inFlight.add(1, ordering: .relaxed)
        let accepted = ContinuousClock.now
        // The job's room is given back once it holds no image data: when it ends, or earlier once
        // its outputs are handed to storage and wait there to be made durable.
        let ended = Atomic<Bool>(false)
        let release: @Sendable (_ beforeResult: Bool) -> Void = { [self] beforeResult in
            admission.signal()
            roomReturned?(beforeResult)
            group.leave()
        }
        let end: @Sendable (JobResult) -> Void = { [self] result in
            ended.store(true, ordering: .releasing)
            completion(result)
            let left = inFlight.subtract(1, ordering: .relaxed).newValue
            group.leave()
            if left == 0 { handler.compressor.releaseMemory() }
        }
        let finish: @Sendable (JobResult) -> Void = { result in
            end(result)
            release(false)
        }
        storage.async { [self] in
            // Inspection writes nothing, so even a halted pipeline still reports what is up to date.
            let inspected = handler.inspect(job, acceptedAt: accepted)
            guard inspected.next == .compress else { return finish(inspected.finished!) }
            if let halt = haltError(job) { return finish(handler.abandon(inspected, halt)) }
            compression.async { [self] in
                if let halt = haltError(job) { return finish(handler.abandon(inspected, halt)) }
                handler.store(
                    handler.compress(inspected), schedule: { storage.async($0) },
                    handedOff: { release(!ended.load(ordering: .acquiring)) }, completion: end)
            }
        }
    }

    /// The result of a job refused because the pipeline was halted, if it was.
    private func haltError(_ job: Job) -> JobResult? {
        guard let error = halted.withLock({ $0 }) else { return nil }
        return JobResult(
            source: job.sourceName, status: .failed,
            error: ImagePipeError(error.code, "not processed: \(error.reason)"), attempts: job.attempt)
    }
}
