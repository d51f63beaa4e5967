// The jobs waiting, in flight and retrying, as gauges set by whoever knows them (readiness checks, scrapes).
public import CoreMetrics

/// `imagepipe_jobs_waiting`, `imagepipe_jobs_in_flight` and `imagepipe_jobs_retrying`.
public struct WorkloadGauges: Sendable {
    private let waiting: Gauge
    private let inFlight: Gauge
    private let retrying: Gauge

    /// Creates the gauges (at zero); `factory` is the process's metrics backend unless a test gives its own.
    public init(factory: any MetricsFactory = MetricsSystem.factory) {
        waiting = Gauge(label: MetricCatalogue.waiting.name, factory: factory)
        inFlight = Gauge(label: MetricCatalogue.inFlight.name, factory: factory)
        retrying = Gauge(label: MetricCatalogue.retrying.name, factory: factory)
        for gauge in [waiting, inFlight, retrying] { gauge.record(0) }
    }

    /// Jobs waiting to be claimed or started.
    public func setWaiting(_ count: Int) { waiting.record(count) }

    /// Jobs being worked on, and jobs held for another attempt.
    public func set(inFlight: Int, retrying: Int) {
        self.inFlight.record(inFlight)
        self.retrying.record(retrying)
    }
}
