// Options of the commands that run as a service or for long (watch, batch): monitoring endpoints and the log format.
import ArgumentParser
import ImagePipeMonitoring
import ImagePipe

/// How a long run is watched from outside.
struct ServiceOptions: ParsableArguments {
    @Option(
        name: .customLong("metrics-address"),
        help: ArgumentHelp(
            "Serve /metrics (Prometheus), /healthz and /readyz on HOST:PORT, e.g. 127.0.0.1:9464 ([::1]:9464, :9464 for every "
                + "interface; port 0 takes a free port, logged).",
            valueName: "host:port"))
    var metricsAddress: String?

    @Option(name: .customLong("check-interval"), help: "Seconds between the readiness checks of the queue and the storage behind /readyz.")
    var checkInterval: Double = 10

    @Option(
        name: .customLong("log-format"),
        help: ArgumentHelp(
            "text, or json: one object per line with time, level, message, label and the fields.", valueName: "format"))
    var logFormat: LogFormat = .text

    @Option(
        name: .customLong("otlp-endpoint"),
        help: ArgumentHelp(
            "Export traces over OTLP/HTTP to this collector, e.g. http://127.0.0.1:4318 (spans go to /v1/traces); "
                + "OTEL_EXPORTER_OTLP_ENDPOINT and the other OTEL_* variables do the same.",
            valueName: "url"))
    var otlpEndpoint: String?

    func validate() throws {
        guard checkInterval > 0 else { throw ValidationError("--check-interval must be positive") }
        if let metricsAddress {
            do { _ = try MonitoringAddress(parsing: metricsAddress) } catch { throw ValidationError(error.reason) }
        }
    }

    /// The address to serve on, when asked.
    var address: MonitoringAddress? {
        metricsAddress.flatMap { try? MonitoringAddress(parsing: $0) }
    }
}
