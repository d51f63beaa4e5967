// Every metric imagepipe exposes, in one list: name, type, labels, help text and histogram buckets.
import Prometheus

/// One exposed metric.
public struct MetricDefinition: Sendable, Equatable {
    /// The Prometheus type.
    public enum Kind: String, Sendable {
        case counter, gauge, histogram
    }

    /// The full name, `imagepipe_` first, the unit and `_total` (counters) last.
    public let name: String
    /// The Prometheus type.
    public let kind: Kind
    /// The label names every series of it carries.
    public let labels: [String]
    /// The `# HELP` text.
    public let help: String

    /// The name and help as swift-prometheus takes them.
    var descriptor: MetricNameDescriptor {
        MetricNameDescriptor(metricName: name, unitName: "", helpText: help)
    }
}

/// The metrics of a worker or a batch.
///
/// Recorded through swift-metrics' API (``JobMetrics``, the object stores' request counters, the
/// gauges set at scrape time), and exported by the Prometheus registry with the help text found
/// here. The README's metric table and the Grafana dashboard name exactly these.
public enum MetricCatalogue {
    public static let jobs = MetricDefinition(
        name: "imagepipe_jobs_total", kind: .counter, labels: ["outcome", "error_code"],
        help: "Jobs finished, by outcome (done, skipped, failed, cancelled) and error code (failed jobs only).")
    public static let retries = MetricDefinition(
        name: "imagepipe_job_retries_total", kind: .counter, labels: ["error_code"],
        help: "Attempts that failed for a reason that may pass and were scheduled again (watch mode).")
    public static let stageDuration = MetricDefinition(
        name: "imagepipe_stage_duration_seconds", kind: .histogram, labels: ["stage"],
        help: "Time a done job spent in each stage: queue (waiting for a slot), read, check (destination lookups), "
            + "decode (with shrink-on-load), encode (resize and encode every variant), store, and total.")
    public static let inputBytes = MetricDefinition(
        name: "imagepipe_input_bytes_total", kind: .counter, labels: [],
        help: "Bytes of the originals of done jobs.")
    public static let outputBytes = MetricDefinition(
        name: "imagepipe_output_bytes_total", kind: .counter, labels: ["format"],
        help: "Bytes of the variants stored, by output format.")
    public static let waiting = MetricDefinition(
        name: "imagepipe_jobs_waiting", kind: .gauge, labels: [],
        help: "Jobs waiting to be claimed (watch: as of the last readiness check) or started (batch).")
    public static let inFlight = MetricDefinition(
        name: "imagepipe_jobs_in_flight", kind: .gauge, labels: [],
        help: "Jobs being read, compressed or stored.")
    public static let retrying = MetricDefinition(
        name: "imagepipe_jobs_retrying", kind: .gauge, labels: [],
        help: "Jobs this worker holds, waiting to be tried again.")
    public static let storageRequests = MetricDefinition(
        name: "imagepipe_storage_requests_total", kind: .counter, labels: ["service", "method", "status"],
        help: "Requests to object storage (reads and writes), by service, method and HTTP status (error: no answer).")
    public static let storageRetries = MetricDefinition(
        name: "imagepipe_storage_retries_total", kind: .counter, labels: ["service"],
        help: "Storage requests sent again after a retryable failure.")
    public static let notifications = MetricDefinition(
        name: "imagepipe_notifications_total", kind: .counter, labels: ["outcome"],
        help: "Job notifications to --notify-url, by outcome: delivered, or failed (refused, or undelivered by the deadline).")
    public static let notificationRetries = MetricDefinition(
        name: "imagepipe_notification_retries_total", kind: .counter, labels: [],
        help: "Notification attempts sent again after a 5xx, 408, 429, timeout or connection error.")
    public static let helperRestarts = MetricDefinition(
        name: "imagepipe_helper_restarts_total", kind: .counter, labels: ["reason"],
        help: "Image helper processes replaced, by reason: crashed (died on a job), timeout (killed past --job-timeout), "
            + "misbehaved (sent what the protocol does not allow).")
    public static let residentMemory = MetricDefinition(
        name: "imagepipe_process_resident_memory_bytes", kind: .gauge, labels: [],
        help: "Resident memory of the process (VmRSS), read at scrape time.")
    public static let openFileDescriptors = MetricDefinition(
        name: "imagepipe_process_open_fds", kind: .gauge, labels: [],
        help: "Open file descriptors of the process, counted at scrape time.")
    public static let threads = MetricDefinition(
        name: "imagepipe_process_threads", kind: .gauge, labels: [],
        help: "Threads of the process, read at scrape time.")
    public static let ready = MetricDefinition(
        name: "imagepipe_ready", kind: .gauge, labels: [],
        help: "1 while /readyz answers 200: the queue and storage were reachable at the last check and no stop was asked for.")

    /// Every metric, in the order the README lists them.
    public static let all: [MetricDefinition] = [
        jobs, retries, stageDuration, inputBytes, outputBytes, waiting, inFlight, retrying,
        storageRequests, storageRetries, notifications, notificationRetries, helperRestarts, residentMemory, openFileDescriptors, threads,
        ready,
    ]

    /// The definition of a metric by its name.
    public static func named(_ name: String) -> MetricDefinition? {
        byName[name]
    }

    private static let byName = Dictionary(uniqueKeysWithValues: all.map { ($0.name, $0) })

    /// Upper bounds of the duration buckets: a small thumbnail takes milliseconds, a large AVIF tens of seconds.
    public static let durationBuckets: [Duration] = [
        .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250),
        .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10), .seconds(30), .seconds(60),
    ]
}
