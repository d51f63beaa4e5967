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

    /// Creates a runner.
    public init(scanner: SourceScanner, pipeline: JobPipeline) {
        self.scanner = scanner
        self.pipeline = pipeline
        self.handler = pipeline.handler
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
    /// with `storage_full`.
    ///
    /// - Throws: `configuration` when the sources cannot be listed or the destination's probe fails,
    ///   before any image is decoded.
    /// - Parameter shouldStop: asked before each job is submitted; once it says yes (Ctrl-C), no
    ///   more jobs start, the ones in flight finish, and the summary says it was interrupted.
    public func run(
        onStart: @Sendable (SourceScanner.Result) -> Void = { _ in },
        shouldStop: () -> Bool = { false },
        onResult: @escaping @Sendable (JobResult, Progress) -> Void
    ) throws(ImagePipeError) -> BatchSummary {
        let started = ContinuousClock.now
        let scan = try start()
        onStart(scan)
        return run(scan, startedAt: started, shouldStop: shouldStop, onResult: onResult)
    }

    /// Lists the sources and probes the destination: the part of a run that can stop it with a
    /// configuration error, before anything is decoded or written.
    public func start() throws(ImagePipeError) -> SourceScanner.Result {
        let scan = try scanner.scan()
        try handler.storage.probe()
        return scan
    }

    /// Runs every job of a ``start()``ed batch; see ``run(onStart:shouldStop:onResult:)``.
    public func run(
        _ scan: SourceScanner.Result, startedAt started: ContinuousClock.Instant = .now,
        shouldStop: () -> Bool = { false },
        onResult: @escaping @Sendable (JobResult, Progress) -> Void
    ) -> BatchSummary {
        let total = scan.jobs.count
        let collected = Mutex((summary: BatchSummary(), finished: 0))
        collected.withLock {
            $0.summary.total = total
            for skipped in scan.skipped { $0.summary.add(skipped) }
        }
        // Results arrive on pipeline threads; a serial queue keeps callbacks ordered and one at a time.
        let delivery = DispatchQueue(label: "imagepipe.batch.results")
        let deliver: @Sendable (JobResult) -> Void = { [pipeline] result in
            if result.errorCode == .storageFull, let error = result.failure { pipeline.halt(error) }
            let (finished, failed) = collected.withLock { collected -> (Int, Int) in
                collected.summary.add(result)
                collected.finished += 1
                return (collected.finished, collected.summary.failed)
            }
            delivery.async {
                onResult(result, Progress(finished: finished, failed: failed, total: total, elapsed: .now - started))
            }
        }

        let collisions = handler.keyCollisions(in: scan.jobs)
        var interrupted = false
        for index in Self.largestFirst(scan.jobs) {
            let job = scan.jobs[index]
            if shouldStop() {
                interrupted = true
                break
            }
            if let collision = collisions[index] {
                deliver(JobResult(source: job.sourceName, status: .failed, error: collision))
                continue
            }
            // Wait for room a little at a time, so a stop asked for meanwhile starts nothing more.
            var reserved = false
            while !reserved && !shouldStop() {
                reserved = pipeline.reserve(timeout: .now() + .milliseconds(50))
            }
            if shouldStop() {
                if reserved { pipeline.cancelReservation() }
                interrupted = true
                break
            }
            pipeline.submitReserved(job, completion: deliver)
        }
        pipeline.waitUntilIdle()
        delivery.sync {}
        return collected.withLock { collected in
            collected.summary.wallTime = .now - started
            collected.summary.interrupted = interrupted
            return collected.summary
        }
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
    /// source and looks up its outputs in the destination, but neither probes, decodes nor writes.
    public func plan(onPlan: (InspectedJob) -> Void) throws(ImagePipeError) {
        let scan = try scanner.scan()
        for skipped in scan.skipped {
            var inspected = InspectedJob(job: Job(path: skipped.source, relativePath: skipped.source), acceptedAt: .now, inspectedAt: .now)
            inspected.finished = skipped
            onPlan(inspected)
        }
        let collisions = handler.keyCollisions(in: scan.jobs)
        for (index, job) in scan.jobs.enumerated() {
            var inspected = handler.inspect(job, reserving: false)
            if let collision = collisions[index] {
                inspected.finished = JobResult(source: job.sourceName, status: .failed, error: collision)
            }
            onPlan(inspected)
        }
    }
}
