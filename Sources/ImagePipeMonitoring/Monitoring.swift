// Everything --metrics-address runs, assembled: the metrics backend, health, the readiness checks and the server.
import CoreMetrics
public import ImagePipe
public import Logging
public import Prometheus
public import ServiceLifecycle
import Synchronization

/// The monitoring of one process: `/metrics`, `/healthz` and `/readyz` on one port.
///
/// Watch mode runs ``services`` in its ServiceGroup (the server first, so it stops last); a batch
/// runs the checks in a task and calls ``stop()`` when it is done.
public final class Monitoring: Sendable {
    /// The health the endpoints report.
    public let health: Health
    /// The HTTP server (bound).
    public let server: MonitoringServer
    /// The periodic readiness checks.
    public let checks: ReadinessChecks

    /// The registry swift-metrics records into once ``bootstrapMetrics()`` has run.
    private static let registry = Mutex<PrometheusCollectorRegistry?>(nil)

    /// Makes swift-metrics record into a Prometheus registry (once per process; later calls return
    /// the same registry). Call before any metric is created: handles made earlier record nowhere.
    public static func bootstrapMetrics() -> PrometheusCollectorRegistry {
        registry.withLock { registry in
            if let registry { return registry }
            let created = PrometheusCollectorRegistry()
            MetricsSystem.bootstrap(CataloguedMetricsFactory(registry: created))
            registry = created
            return created
        }
    }

    /// Binds `address` and prepares the checks (they start with ``services`` or ``runChecks()``).
    ///
    /// - Parameters:
    ///   - checks: what readiness rests on (queue, storage).
    ///   - liveness: whether the worker is alive, for `/healthz`.
    ///   - stopRequested: whether a stop was asked for (not ready from then on).
    ///   - beforeScrape: sets gauges read at scrape time (jobs in flight); process figures are added here.
    /// - Throws: `configuration` when the address cannot be bound.
    public init(
        address: MonitoringAddress, checks: [ReadinessCheck], checkInterval: Duration,
        liveness: @escaping @Sendable () -> Bool, stopRequested: @escaping @Sendable () -> Bool,
        beforeScrape: [@Sendable () -> Void], logger: Logger
    ) async throws(ImagePipeError) {
        let registry = Self.bootstrapMetrics()
        let health = Health(checks: checks.map(\.name), liveness: liveness, stopRequested: stopRequested)
        let process = ProcessMetrics()
        let endpoints = MonitoringEndpoints(registry: registry, health: health, beforeScrape: beforeScrape + [{ process.update() }])
        self.health = health
        self.checks = ReadinessChecks(checks, health: health, interval: checkInterval, logger: logger)
        self.server = try await MonitoringServer.start(at: address, endpoints: endpoints, logger: logger)
    }

    /// The services to run in a ServiceGroup, before the worker or the batch: the server, then the checks.
    public var services: [any Service] { [server, checks] }
}
