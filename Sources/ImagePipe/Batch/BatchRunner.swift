// Runs one batch: scan the inputs, refuse key collisions, feed the pipeline, collect every result.
import Dispatch
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Processes every image of a batch's inputs through a ``JobPipeline``.
public struct BatchRunner: Sendable {
    /// The scanner that lists the sources.
    public let scanner: SourceScanner
    /// The pipeline the jobs go through.
    public let pipeline: JobPipeline
    /// The pipeline's handler: what a batch asks of it before anything is scheduled (the
    /// destination's probe, key collisions, a dry run's inspections).
    private let handler: FileHandler
    /// How many finished jobs' results may wait for `onResult` before no new job starts.
    private let deliveryLimit: Int
    /// The span the run's span continues (a `TRACEPARENT` in the environment), when traced.
    public var traceParent: TraceParent?

    /// Creates a runner; at most `deliveryLimit` results wait for their callback at once.
    public init(scanner: SourceScanner, pipeline: JobPipeline, deliveryLimit: Int = 64) {
        self.scanner = scanner
        self.pipeline = pipeline
        self.handler = pipeline.handler
        self.deliveryLimit = deliveryLimit
    }

    /// Progress after each finished job.
    public struct Progress: Sendable {
        /// Jobs finished so far.
        public var finished: Int
        /// Jobs that failed so far.
        public var failed: Int
        /// Jobs in the batch.
        public var total: Int
        /// Time since the batch started.
        public var elapsed: Duration

        /// Creates a progress report.
        public init(finished: Int, failed: Int, total: Int, elapsed: Duration) {
            self.finished = finished
            self.failed = failed
            self.total = total
            self.elapsed = elapsed
        }

        /// The live line, e.g. `[12/40] 1 failed, 3.2 images/s, ETA 0:09`.
        public var line: String {
            let seconds = elapsed.milliseconds / 1000
            let rate = seconds > 0 ? Double(finished) / seconds : 0
            let eta = rate > 0 ? Int((Double(total - finished) / rate).rounded()) : 0
            return String(format: "[%d/%d] %d failed, %.1f images/s, ETA %d:%02d", finished, total, failed, rate, eta / 60, eta % 60)
        }
    }

    /// Scans, probes the destination, then runs every job, calling `onStart` once with the scan and
    /// `onResult` after each job (serially, in completion order). Returns when the last job is finished.
    ///
    /// Once the destination reports it is full, nothing more is decoded: the jobs left fail at once
    /// with `storage_full`. Cancelling the calling task (Ctrl-C) starts no more image work: jobs
    /// whose decoding has started finish, the others end unrecorded (a later run does them), and
    /// the summary says it was interrupted.
    ///
    /// - Throws: `configuration` when the sources cannot be listed or the destination's probe fails,
    ///   before any image is decoded.
    public func run(
        onStart: @Sendable (SourceScanner.Result) -> Void = { _ in },
        onResult: @escaping @Sendable (JobResult, Progress) -> Void
    ) async throws(ImagePipeError) -> BatchSummary {
        let started = ContinuousClock.now
        let scan = try await BlockingIO.run { () throws(ImagePipeError) in try start() }
        onStart(scan)
        return await run(scan, startedAt: started, onResult: onResult)
    }

    /// Lists the sources and probes the destination: the part of a run that can stop it with a
    /// configuration error, before anything is decoded or written. Blocking I/O.
    public func start() throws(ImagePipeError) -> SourceScanner.Result {
        let scan = try scanner.scan()
        try handler.storage.probe()
        return scan
    }

    /// Runs every job of a ``start()``ed batch; see ``run(onStart:onResult:)``.
    public func run(
        _ scan: SourceScanner.Result, startedAt started: ContinuousClock.Instant = .now,
        onResult: @escaping @Sendable (JobResult, Progress) -> Void
    ) async -> BatchSummary {
        let total = scan.jobs.count
        // One trace for the run: its span is every original's span's parent.
        let tracer = handler.configuration.tracer
        let runID = traceParent?.traceID ?? TraceID.random()
        let runTrace = tracer?.startJob(parent: traceParent, trace: runID, at: started)
        // Every original's span is the run's child; a run not sampled has none of its images
        // sampled either (a parent-based sampler hears it, a ratio sampler sees the same trace).
        let jobParent =
            tracer == nil
            ? nil : runTrace?.traceparent ?? TraceParent(traceID: runID, spanID: traceParent?.spanID ?? .random(), sampled: false)
        let collected = Mutex((summary: BatchSummary(), finished: 0))
        collected.withLock {
            $0.summary.total = total
            for skipped in scan.skipped { $0.summary.add(skipped) }
            $0.summary.hidden = scan.hidden.count
        }
        // Results arrive on pipeline threads; a serial queue keeps callbacks ordered and one at a
        // time, and may block (a manifest's write).
        let delivery = DispatchQueue(label: "imagepipe.batch.results")
        let backlog = DeliveryBacklog(limit: deliveryLimit)
        let deliver: @Sendable (JobResult) -> Void = { [pipeline] result in
            if let error = result.failure, Self.halts(error) { pipeline.halt(error) }
            let (finished, failed) = collected.withLock { collected -> (Int, Int) in
                collected.summary.add(result)
                collected.finished += 1
                return (collected.finished, collected.summary.failed)
            }
            backlog.added()
            delivery.async {
                // The image's span ends when its result is in: not after the callback, which may
                // wait for room among other images' notifications.
                let ended = ContinuousClock.now
                onResult(result, Progress(finished: finished, failed: failed, total: total, elapsed: .now - started))
                if let tracer, let trace = result.trace {
                    let attributes = result.spanAttributes + [("imagepipe.source", .string(result.source))]
                    tracer.record(trace.finished("image", kind: .internal, at: ended, attributes: attributes, status: result.spanStatus))
                }
                backlog.delivered()
            }
        }

        let order = await BlockingIO.run { Self.largestFirst(scan.jobs) }
        let collisions = handler.keyCollisions(in: scan.jobs)
        // Jobs submitted and not yet finished, by index: an interruption withdraws them, and those
        // whose image work has not started end there (small ones waiting for a batch may be many).
        // Withdrawn as the cancellation comes, and any registered after it at once.
        let unfinished = Mutex((tokens: [Int: JobCancellation](), withdrawing: false, withdrawn: 0))
        let withdrawAll: @Sendable () -> Void = {
            unfinished.withLock { unfinished in
                unfinished.withdrawing = true
                for token in unfinished.tokens.values { token.withdraw() }
            }
        }
        let interrupted = await withTaskCancellationHandler { () async -> Bool in
            var interrupted = false
            for index in order {
                // A store that stays unreachable past a job's retries halts the batch: the rest are not
                // started, rather than each decoded and then failed after its own retries.
                if pipeline.haltReason?.code == .storageUnavailable { break }
                var job = scan.jobs[index]
                job.traceParent = jobParent
                // A file takes its clash only if its bytes show it is an image: one that is none is
                // skipped as such, whatever it is called.
                job.keyCollision = collisions[index]
                await backlog.waitForRoom()
                do {
                    try await pipeline.reserve()
                } catch {
                    interrupted = true
                    break
                }
                if pipeline.haltReason?.code == .storageUnavailable {
                    pipeline.cancelReservation()
                    break
                }
                let token = JobCancellation()
                job.cancellation = token
                unfinished.withLock { unfinished in
                    if unfinished.withdrawing { token.withdraw() }
                    unfinished.tokens[index] = token
                }
                pipeline.submit(job) { event in
                    switch event {
                    case .finished(let result):
                        unfinished.withLock { _ = $0.tokens.removeValue(forKey: index) }
                        deliver(result)
                    case .withdrawn:
                        unfinished.withLock { unfinished in
                            unfinished.tokens.removeValue(forKey: index)
                            unfinished.withdrawn += 1
                        }
                    case .handedOff:
                        break
                    }
                }
            }
            if interrupted { withdrawAll() }
            await pipeline.idle()
            // A stop that came once every image was under way interrupted nothing.
            return interrupted || unfinished.withLock { $0.withdrawn > 0 }
        } onCancel: {
            withdrawAll()
        }
        await withCheckedContinuation { continuation in delivery.async { continuation.resume() } }
        if let tracer, let runTrace {
            let summary = collected.withLock { $0.summary }
            tracer.record(
                runTrace.finished(
                    "batch", kind: .internal, at: .now,
                    attributes: [
                        ("imagepipe.sources", .int(total)), ("imagepipe.done", .int(summary.done)),
                        ("imagepipe.failed", .int(summary.failed)), ("imagepipe.skipped", .int(summary.skipped)),
                    ], status: summary.failed > 0 ? .error("\(summary.failed) failed") : .unset))
        }
        return collected.withLock { collected in
            collected.summary.wallTime = .now - started
            collected.summary.interrupted = interrupted
            if let halt = pipeline.haltReason, halt.code == .storageUnavailable {
                collected.summary.halted = halt
                collected.summary.notStarted = total - collected.finished
            }
            return collected.summary
        }
    }

    /// Whether a job's failure halts the batch: the destination is full, or a store stayed
    /// unreachable through every retry of a request (`storage_unavailable` is only reported once
    /// they are spent), which the next images would meet too.
    static func halts(_ error: ImagePipeError) -> Bool {
        error.code == .storageFull || error.code == .storageUnavailable
    }

    /// The order jobs start in: largest source first (longest processing time first), so the batch
    /// does not end with one big image running alone while the other cores idle. The size on disk
    /// (or as listed, for objects) stands in for the work; ties keep the scan's order.
    static func largestFirst(_ jobs: [Job]) -> [Int] {
        let sizes = jobs.map { job -> Int in
            if let object = job.object { return object.bytes ?? 0 }
            var info = stat()
            return job.sourcePath.withCString { stat($0, &info) } == 0 ? Int(info.st_size) : 0
        }
        return jobs.indices.sorted { sizes[$0] != sizes[$1] ? sizes[$0] > sizes[$1] : $0 < $1 }
    }

    /// What a run would do to each source, in path order, touching nothing: reads and hashes each
    /// source, looks up its outputs in the destination and reads its header and end
    /// (``FileHandler/predict(_:)``), but neither probes, decodes nor writes. Blocking I/O.
    public func plan(onPlan: (JobContext) -> Void) throws(ImagePipeError) {
        let scan = try scanner.scan()
        for skipped in scan.skipped {
            onPlan(JobContext(job: Job(path: skipped.source, relativePath: skipped.source), result: skipped))
        }
        let collisions = handler.keyCollisions(in: scan.jobs)
        for (index, var job) in scan.jobs.enumerated() {
            job.keyCollision = collisions[index]
            var context = JobContext(job: job)
            handler.inspect(&context, reserving: false)
            handler.predict(&context)
            onPlan(context)
        }
    }
}
