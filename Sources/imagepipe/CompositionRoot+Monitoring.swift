// The monitoring of a worker or a batch: which readiness checks, what liveness means, which gauges are read at scrape time.
import ImagePipe
import ImagePipeMonitoring
import ImagePipeQueue
import Logging

extension CompositionRoot {
    /// How long a worker loop may go without looking for work before `/healthz` says it is not alive:
    /// it looks at least once per poll interval (a second at most), and a claim that hangs ends with
    /// the statement timeout (10 s).
    static let livenessWindow: Duration = .seconds(30)

    /// A worker's monitoring: ready while its queue and storage answer and no stop was asked for,
    /// alive while its loop looks for work; the waiting count comes with each queue check, the jobs
    /// in flight and retrying are read at each scrape.
    static func monitoring(
        at address: MonitoringAddress, worker: WorkerLoop, storage: any StorageRepository,
        interval: Duration, logger: Logger
    ) async throws(ImagePipeError) -> Monitoring {
        let workload = WorkloadGauges()
        let queue = worker.queue
        return try await Monitoring(
            address: address,
            checks: [
                ReadinessCheck("queue") { () async throws(ImagePipeError) in
                    if let waiting = try await queue.check() { workload.setWaiting(waiting) }
                },
                ReadinessCheck.blocking("storage") { () throws(ImagePipeError) in try storage.probe() },
                fileSystems,
            ],
            checkInterval: interval,
            liveness: { worker.isAlive(within: livenessWindow) },
            stopRequested: { worker.isStopping },
            beforeScrape: [
                {
                    let statistics = worker.statistics
                    workload.set(inFlight: statistics.inFlight, retrying: statistics.retrying)
                }
            ],
            logger: logger)
    }
}

extension CompositionRoot {
    /// Fails while a write to the queue or the destination has not returned for half a minute
    /// (``StallWatch``): a frozen disk or a hung network mount holds the worker's jobs without an
    /// error, and a probe of its own might not reach the stalled call's file system.
    static let fileSystems = ReadinessCheck("file-systems") { () async throws(ImagePipeError) in
        guard let call = StallWatch.stalled() else { return }
        let seconds = Int((ContinuousClock.now - call.since).components.seconds)
        throw ImagePipeError(
            .storageUnavailable,
            "\(call.what) has not returned for \(seconds) s: its file system may be frozen or shut down, or a network mount hung")
    }
}

extension CompositionRoot {
    /// A batch's monitoring: ready while its storage answers and no stop was asked for, alive while it
    /// runs; jobs waiting and in flight are read at each scrape.
    static func monitoring(
        at address: MonitoringAddress, batch: BatchProgressState, stopRequested: @escaping @Sendable () -> Bool,
        interval: Duration, logger: Logger
    ) async throws(ImagePipeError) -> Monitoring {
        let workload = WorkloadGauges()
        return try await Monitoring(
            address: address,
            checks: [
                ReadinessCheck.blocking("storage") { () throws(ImagePipeError) in
                    guard let storage = batch.storage else { throw ImagePipeError(.configuration, "the destination is not set up yet") }
                    try storage.probe()
                },
                fileSystems,
            ],
            checkInterval: interval,
            liveness: { true },
            stopRequested: stopRequested,
            beforeScrape: [
                {
                    let (waiting, inFlight) = batch.workload
                    workload.setWaiting(waiting)
                    workload.set(inFlight: inFlight, retrying: 0)
                }
            ],
            logger: logger)
    }
}
