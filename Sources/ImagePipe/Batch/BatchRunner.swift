// Runs one batch: scan a folder, refuse key collisions, feed the pipeline, collect every result.
import Dispatch
import Foundation
import Synchronization

/// Processes every image under a directory through a ``JobPipeline``.
public struct BatchRunner: Sendable {
    /// The scanner that lists the sources.
    public let scanner: SourceScanner
    /// The pipeline the jobs go through.
    public let pipeline: JobPipeline

    /// Creates a runner.
    public init(scanner: SourceScanner, pipeline: JobPipeline) {
        self.scanner = scanner
        self.pipeline = pipeline
    }

    /// Progress after each finished job.
    public struct Progress: Sendable {
        /// Jobs finished so far.
        public var finished: Int
        /// Jobs in the batch.
        public var total: Int
        /// Time since the batch started.
        public var elapsed: Duration
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
    public func run(onStart: @Sendable (SourceScanner.Result) -> Void = { _ in },
                    shouldStop: () -> Bool = { false },
                    onResult: @escaping @Sendable (JobResult, Progress) -> Void) throws(ImagePipeError) -> BatchSummary {
        let started = ContinuousClock.now
        let scan = try scanner.scan()
        try pipeline.handler.storage.probe()
        onStart(scan)
        let total = scan.jobs.count
        let collected = Mutex((summary: BatchSummary(), finished: 0))
        collected.withLock {
            $0.summary.total = total
            $0.summary.skipped = scan.skipped.count
        }
        // Results arrive on pipeline threads; a serial queue keeps callbacks ordered and one at a time.
        let delivery = DispatchQueue(label: "imagepipe.batch.results")
        let deliver: @Sendable (JobResult) -> Void = { [pipeline] result in
            if result.errorCode == .storageFull, let error = result.failure { pipeline.halt(error) }
            let finished = collected.withLock { collected -> Int in
                collected.summary.add(result)
                collected.finished += 1
                return collected.finished
            }
            delivery.async {
                onResult(result, Progress(finished: finished, total: total, elapsed: .now - started))
            }
        }

        let collisions = Self.collisions(in: scan.jobs, configuration: pipeline.handler.configuration)
        var interrupted = false
        for job in scan.jobs {
            if shouldStop() {
                interrupted = true
                break
            }
            if let collision = collisions[job.relativePath] {
                deliver(JobResult(source: job.relativePath, status: .failed, error: collision))
                continue
            }
            pipeline.submit(job, completion: deliver)
        }
        pipeline.waitUntilIdle()
        delivery.sync {}
        return collected.withLock { collected in
            collected.summary.wallTime = .now - started
            collected.summary.interrupted = interrupted
            return collected.summary
        }
    }

    /// What a run would do to each source, in path order, touching nothing: reads and hashes each
    /// source and looks up its outputs in the destination, but neither probes, decodes nor writes.
    public func plan(onPlan: (InspectedJob) -> Void) throws(ImagePipeError) {
        let scan = try scanner.scan()
        let collisions = Self.collisions(in: scan.jobs, configuration: pipeline.handler.configuration)
        for job in scan.jobs {
            var inspected = pipeline.handler.inspect(job, reserving: false)
            if let collision = collisions[job.relativePath] {
                inspected.finished = JobResult(source: job.relativePath, status: .failed, error: collision)
            }
            onPlan(inspected)
        }
    }

    /// Sources whose keys another (earlier, by path) source of the batch already produces.
    ///
    /// Keys that depend on the content hash cannot be known before reading, and two identical files
    /// writing identical objects are harmless, so such templates are not checked.
    static func collisions(in jobs: [Job], configuration: FileHandler.Configuration) -> [String: ImagePipeError] {
        guard !configuration.keyTemplate.usesHash else { return [:] }
        var owners: [String: String] = [:]
        var collisions: [String: ImagePipeError] = [:]
        for job in jobs {
            let values = KeyTemplate.Values(relativePath: job.relativePath, sha256: nil)
            let keys = configuration.variants.compactMap {
                try? configuration.keyTemplate.key(for: values, variant: $0.name, ext: $0.format.fileExtension)
            }
            if let clash = keys.first(where: { owners[$0] != nil }) {
                collisions[job.relativePath] = ImagePipeError(
                    .keyCollision,
                    "output key '\(clash)' is already produced by '\(owners[clash]!)'; add {srcext} or {hash} to --key to keep both")
                continue
            }
            for key in keys { owners[key] = job.relativePath }
        }
        return collisions
    }
}
