// Job outcomes, stage durations and bytes, recorded from finished jobs' results through swift-metrics' API.
public import CoreMetrics
public import ImagePipe
public import ImagePipeQueue

/// Records what each finished job did: its outcome and error code, how long each stage took, and
/// the bytes it read and stored.
///
/// The batch calls ``jobFinished(_:)`` with every result; a worker loop calls it (as its
/// ``WorkerObserver``) once the queue has recorded the outcome, and ``jobRetrying(_:)`` for attempts
/// that will run again, so a job retried twice counts once in `imagepipe_jobs_total`. Stage durations
/// come from done jobs only: a job that failed early would pull every quantile towards zero.
public final class JobMetrics: WorkerObserver {
    private let factory: any MetricsFactory
    private let stages: [(timer: Timer, milliseconds: @Sendable (Timings) -> Double)]
    private let inputBytes: Counter

    /// Creates the recorder; `factory` is the process's metrics backend unless a test gives its own.
    public init(factory: any MetricsFactory = MetricsSystem.factory) {
        self.factory = factory
        let stage = { (name: String) in
            Timer(label: MetricCatalogue.stageDuration.name, dimensions: [("stage", name)], factory: factory)
        }
        let stages: [(timer: Timer, milliseconds: @Sendable (Timings) -> Double)] = [
            (stage("queue"), { $0.queueMs }), (stage("read"), { $0.readMs }), (stage("check"), { $0.checkMs }),
            (stage("decode"), { $0.decodeMs }), (stage("encode"), { $0.encodeMs }), (stage("store"), { $0.storeMs }),
            (stage("total"), { $0.totalMs }),
        ]
        self.stages = stages
        inputBytes = Counter(label: MetricCatalogue.inputBytes.name, factory: factory)
    }

    public func jobFinished(_ result: JobResult) {
        Counter(
            label: MetricCatalogue.jobs.name,
            dimensions: [("outcome", result.status.rawValue), ("error_code", result.errorCode?.description ?? "")],
            factory: factory
        ).increment()
        guard result.status == .done else { return }
        for (timer, milliseconds) in stages {
            timer.recordNanoseconds(Int64((milliseconds(result.timings) * 1_000_000).rounded()))
        }
        if let bytes = result.bytes { inputBytes.increment(by: bytes) }
        for variant in result.variants {
            Counter(label: MetricCatalogue.outputBytes.name, dimensions: [("format", variant.format.rawValue)], factory: factory)
                .increment(by: variant.bytes)
        }
    }

    /// Counted under its own outcome, `cancelled`, as `queue status`, the log and the notification
    /// name it, not among the failures its result's status would put it.
    public func jobCancelled(_ result: JobResult) {
        Counter(label: MetricCatalogue.jobs.name, dimensions: [("outcome", "cancelled"), ("error_code", "")], factory: factory).increment()
    }

    public func jobRetrying(_ result: JobResult) {
        Counter(
            label: MetricCatalogue.retries.name, dimensions: [("error_code", result.errorCode?.description ?? "")],
            factory: factory
        ).increment()
    }
}
