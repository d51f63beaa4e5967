// The three endpoints' answers: /metrics from the registry, /healthz and /readyz from the Health.
public import Prometheus

/// Answers the monitoring requests; the HTTP side is ``MonitoringServer``'s.
public struct MonitoringEndpoints: Sendable {
    /// One answer.
    public struct Response: Sendable, Equatable {
        public var status: Int
        public var contentType: String
        public var body: [UInt8]
    }

    let registry: PrometheusCollectorRegistry
    let health: Health
    let beforeScrape: [@Sendable () -> Void]

    /// Creates the endpoints; `beforeScrape` sets the gauges read at scrape time (process figures,
    /// jobs in flight).
    public init(registry: PrometheusCollectorRegistry, health: Health, beforeScrape: [@Sendable () -> Void] = []) {
        self.registry = registry
        self.health = health
        self.beforeScrape = beforeScrape
    }

    /// The answer to `GET path` (a query string is ignored).
    public func respond(to path: Substring) -> Response {
        switch path {
        case "/metrics":
            for update in beforeScrape { update() }
            return Response(status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8", body: registry.emitToBuffer())
        case "/healthz":
            return health.isAlive ? text(200, "ok\n") : text(503, "the worker loop has not looked for work lately\n")
        case "/readyz":
            let problems = health.problems
            return problems.isEmpty ? text(200, "ready\n") : text(503, problems.joined(separator: "\n") + "\n")
        default:
            return text(404, "not found: try /metrics, /healthz or /readyz\n")
        }
    }

    private func text(_ status: Int, _ body: String) -> Response {
        Response(status: status, contentType: "text/plain; charset=utf-8", body: Array(body.utf8))
    }
}
