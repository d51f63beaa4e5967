// Runs jobs through the FileHandler's stages, each where its kind of work belongs, within the pipeline's Capacity.
import Foundation
import Synchronization

/// The concurrent engine of a batch or a worker: it runs the FileHandler's stages where each kind
/// of work belongs and admits jobs as its ``Capacity`` allows; the handler does the work.
///
/// Where work runs (the one rule of imagepipe's concurrency, see docs/design.md):
/// - **CPU work** (decoding, resizing, encoding, scoring, placeholders) runs on the compression
///   queue: ``Capacity/Limits/compressions`` Dispatch threads at once, no more. Small sources
///   wait in a backlog that a free lane takes a share of at once, as one call of the compressor
///   (``ImageCompressor/batching``).
/// - **Blocking I/O** (reading and hashing sources, destination look-ups, writes, `fsync`,
///   `rename`, libcurl requests) runs on the transfer queue, ``Capacity/Limits/transfers`` at once,
///   or on a store's own Dispatch queue (the local directory's rounds of fsyncs). Async code hands
///   its blocking calls to ``BlockingIO``.
/// - **Async work** (the worker loop, PostgreSQL, timers, the monitoring server) runs on Swift's
///   cooperative pool and never blocks it: nothing here blocks its caller.
///
/// One path for every job: admit it (``reserve()`` or ``tryReserve(upTo:)``), then ``submit(_:events:)``
/// it; ``run(_:)`` does both for one job and waits for its result.
public final class JobPipeline: Sendable {
    /// What happens to a submitted job, in order: at most one `handedOff`, then one `finished`;
    /// or `withdrawn` alone.
    public enum JobEvent: Sendable {
        /// The job gave its room back before its result: its outputs were handed to the store and
        /// only wait to be made durable.
        case handedOff
        /// The job ended with this result.
        case finished(JobResult)
        /// The job was withdrawn (``JobCancellation/withdraw()``) while it waited to be read or
        /// compressed: it ends without a result, its room given back, for its queue to have again.
        case withdrawn
    }

    /// The handler every job goes through.
    public let handler: FileHandler
    /// The pipeline's bounds and counts.
    public let capacity: Capacity
    private let compression: BoundedQueue
    private let transfers: BoundedQueue
    private let halted = Mutex<ImagePipeError?>(nil)
    /// Small jobs waiting for a compression lane, in order (see ``CompressionBatching``).
    private let backlog = Mutex<[WaitingCompression]>([])
    /// Small jobs that gave their room back while they wait for a batch, and how many may.
    ///
    /// A lane takes what waits, and the room (sized for images held in memory: twice the
    /// compressions plus the uploads) left one or two small images waiting beside each compression:
    /// batches that small cost the sandboxed helpers 15 % more CPU on 2,000 small JPEGs, a full
    /// batch per lane 1 % (docs/performance.md, "Image helpers"). A small job holds at most its
    /// source's 64 KiB and its outputs, so up to a full batch per lane of them may wait beyond the
    /// room; larger ones, which hold files or downloads, never do.
    private let parked = Atomic<Int>(0)
    private let parkingLimit: Int

    /// Creates a pipeline around a handler.
    public init(handler: FileHandler, limits: Capacity.Limits = .init()) {
        self.handler = handler
        self.capacity = Capacity(limits)
        self.compression = BoundedQueue(label: "imagepipe.compression", limit: limits.compressions, qos: .userInitiated)
        self.transfers = BoundedQueue(label: "imagepipe.transfers", limit: limits.transfers, qos: .userInitiated)
        // Parked jobs still count towards the hold limit: never so many that they take the places
        // handed-off jobs wait for durability in (large rounds of fsyncs).
        let batching = handler.compressor.batching.sources
        self.parkingLimit = batching > 1 ? min(limits.compressions * batching, (limits.holdLimit - limits.room) / 2) : 0
    }

    /// Admits up to `count` jobs without waiting; returns how many. Each is followed by
    /// ``submit(_:events:)`` or given back with ``cancelReservation(_:)``.
    public func tryReserve(upTo count: Int) -> Int { capacity.tryReserve(upTo: count) }

    /// Admits one job, waiting until there is room; throws `CancellationError` when cancelled first.
    public func reserve() async throws { try await capacity.reserve() }

    /// Gives back admissions that will not be used.
    public func cancelReservation(_ count: Int = 1) { capacity.cancelReservation(count) }

    /// Runs an admitted job. `events` is called on pipeline or storage threads and must not block.
    public func submit(_ job: Job, events: @escaping @Sendable (JobEvent) -> Void) {
        var context = JobContext(job: job)
        if let tracer = handler.configuration.tracer {
            context.trace = tracer.startJob(parent: job.traceParent, at: job.claimedDuring?.lowerBound ?? context.acceptedAt)
            if let claim = job.claimedDuring { context.trace?.add("claim", from: claim.lowerBound, to: claim.upperBound) }
        }
        // The job's room comes back once it holds no image data: when it ends, or earlier once its
        // outputs are handed to storage and wait there to be made durable; a small job's too while
        // it waits for a batch (parked, see ``parkingLimit``).
        // 0: holds its room; 1: handed off; 2: ended; 3: parked.
        let progress = Atomic<Int>(0)
        let handedOff: @Sendable () -> Void = { [self] in
            // A job that ended first gave its room back with its end.
            if progress.compareExchange(expected: 0, desired: 1, ordering: .acquiringAndReleasing).exchanged {
                capacity.handOff()
            } else if progress.compareExchange(expected: 3, desired: 1, ordering: .acquiringAndReleasing).exchanged {
                parked.subtract(1, ordering: .relaxed)
            } else {
                return
            }
            events(.handedOff)
        }
        // Ends the job's hold on the pipeline (after its last event, which `ended` sends): its room
        // too, unless it gave that back already. Marked ended first, so no hand-off follows its end.
        let release: @Sendable (_ ended: () -> Void) -> Void = { [self] ended in
            let previous = progress.exchange(2, ordering: .acquiringAndReleasing)
            if previous == 3 { parked.subtract(1, ordering: .relaxed) }
            ended()
            if capacity.end(handedOff: previous == 1 || previous == 3) { handler.compressor.releaseMemory() }
        }
        let finish: @Sendable (JobResult) -> Void = { result in
            release { events(.finished(result)) }
        }
        // A job withdrawn before a stage starts ends there, with what it reserved given back.
        let withdrawn: @Sendable (JobContext) -> Bool = { [self] context in
            guard context.job.cancellation?.isWithdrawn == true, !context.hasEnded else { return false }
            var context = context
            handler.releaseKeys(&context)
            release { events(.withdrawn) }
            return true
        }
        // Not once the pipeline is halted: the jobs admitted then fail unprocessed, as few as may be.
        let park: @Sendable () -> Void = { [self] in
            guard halted.withLock({ $0 == nil }) else { return }
            guard parked.add(1, ordering: .relaxed).newValue <= parkingLimit,
                progress.compareExchange(expected: 0, desired: 3, ordering: .acquiringAndReleasing).exchanged
            else {
                parked.subtract(1, ordering: .relaxed)
                return
            }
            capacity.handOff()
        }
        transfers.async { [self, context] in
            var context = context
            if withdrawn(context) { return }
            // A store that cannot be reached would only fail the inspection's look-ups too, each
            // after its retries: the job ends before it reads or asks anything.
            if let halt = halted.withLock({ $0 }), halt.code == .storageUnavailable {
                context.failure = Self.notProcessed(halt)
                return finish(handler.end(context))
            }
            // Inspection writes nothing, so even a halted pipeline still reports what is up to date.
            handler.inspect(&context)
            if !context.hasEnded, let halt = halted.withLock({ $0 }) { context.failure = Self.notProcessed(halt) }
            stopIfCancelled(&context)
            guard !context.hasEnded else { return finish(handler.end(context)) }
            let waiting = WaitingCompression(context: context, withdrawn: withdrawn) { [self] context in
                var context = context
                stopIfCancelled(&context)
                handler.store(context, schedule: { transfers.async($0) }, handedOff: handedOff, completion: finish)
            }
            // A small source joins the backlog that the next free lane takes a share of at once;
            // any other is compressed alone, in its turn.
            if handler.isBatchable(context) {
                park()
                backlog.withLock { $0.append(waiting) }
                compression.async { [self] in compressBacklog() }
            } else {
                compression.async { [self] in compress([waiting]) }
            }
        }
    }

    /// A job read and inspected, waiting for a compression lane, and what follows once it is compressed.
    private struct WaitingCompression: Sendable {
        var context: JobContext
        /// Ends the job there if it was withdrawn meanwhile (true).
        var withdrawn: @Sendable (JobContext) -> Bool
        var then: @Sendable (JobContext) -> Void

        /// What it takes in a batch's message: its source's bytes, and its name and description.
        var batchBytes: Int {
            guard case .bytes(let data) = context.source?.content else { return 0 }
            return data.count + context.job.relativePath.utf8.count + 64
        }
    }

    /// The jobs a lane compresses next, from the backlog of small ones: a fair share of those
    /// waiting (so that every lane has work), within the compressor's batching bounds. Empty
    /// when other lanes took them all.
    private func takeFromBacklog(atMost limit: Int = .max) -> [WaitingCompression] {
        let batching = handler.compressor.batching
        return backlog.withLock { waiting in
            let share = min(batching.sources, limit, (waiting.count + compression.limit - 1) / compression.limit)
            var count = 0
            var bytes = 0
            while count < min(share, waiting.count) {
                bytes += waiting[count].batchBytes
                if count > 0, bytes > batching.totalBytes { break }
                count += 1
            }
            defer { waiting.removeFirst(count) }
            return Array(waiting.prefix(count))
        }
    }

    /// Compresses small jobs from the backlog on this lane, batch after batch while more are
    /// waiting, within one session of the compressor (a sandboxed helper started once for them, up
    /// to its bound): a helper costs a fork and its start, several small images' work.
    private func compressBacklog() {
        var jobs = takeFromBacklog()
        guard !jobs.isEmpty else { return }
        let session = handler.compressor.openSession()
        defer { session?.close() }
        while true {
            compress(jobs, session: session)
            guard let session, session.room > 0 else { return }
            jobs = takeFromBacklog(atMost: session.room)
            if jobs.isEmpty { return }
        }
    }

    /// Compresses jobs on this lane: one by one, or in one call of the compressor when several (or
    /// within a session).
    private func compress(_ jobs: [WaitingCompression], session: (any CompressionSession)? = nil) {
        var kept: [WaitingCompression] = []
        var contexts: [JobContext] = []
        for job in jobs {
            var context = job.context
            if job.withdrawn(context) { continue }
            if let halt = halted.withLock({ $0 }) { context.failure = Self.notProcessed(halt) }
            stopIfCancelled(&context)
            kept.append(job)
            contexts.append(context)
        }
        if contexts.count == 1 && session == nil {
            handler.compress(&contexts[0], memory: capacity.memory)
        } else if !contexts.isEmpty {
            handler.compress(batch: &contexts, memory: capacity.memory, session: session)
        }
        for (job, context) in zip(kept, contexts) { job.then(context) }
    }

    /// Admits and runs one job, and returns its result.
    public func run(_ job: Job) async throws -> JobResult {
        try await reserve()
        return await withCheckedContinuation { continuation in
            submit(job) { event in
                if case .finished(let result) = event { continuation.resume(returning: result) }
            }
        }
    }

    /// Stops compressing: every job not yet decoded fails with `error` once it has been inspected
    /// (a batch whose destination is full need not decode the rest; those already up to date are
    /// still reported skipped). A `storage_unavailable` halt ends jobs before their inspection,
    /// which would ask the store that cannot be reached.
    public func halt(_ error: ImagePipeError) {
        halted.withLock { if $0 == nil { $0 = error } }
    }

    /// Small jobs read and waiting for a compression lane to take them, several at a time.
    public var waitingForCompression: Int { backlog.withLock { $0.count } }

    /// Why the pipeline was halted, if it was.
    public var haltReason: ImagePipeError? { halted.withLock { $0 } }

    /// Suspends until every admitted job has ended.
    public func idle() async { await capacity.idle() }

    /// The safe points, between stages: a job whose result is no longer wanted stores nothing more.
    private func stopIfCancelled(_ context: inout JobContext) {
        guard !context.hasEnded, context.job.cancellation?.isCancelled == true else { return }
        context.failure = ImagePipeError(.cancelled, "stopped: its result is no longer wanted (cancelled, or its claim was lost)")
    }

    private static func notProcessed(_ error: ImagePipeError) -> ImagePipeError {
        ImagePipeError(error.code, "not processed: \(error.reason)")
    }
}
