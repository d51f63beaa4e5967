// Storage requests and retries counted through swift-metrics' API: free when no backend is bootstrapped, a counter bump when one is.
import CoreMetrics

/// The object stores' request counters, by service (`s3`, `supabase`).
///
/// Recorded where requests are sent and retried, so sources read and variants stored are counted
/// alike. Labels stay few: the method and the HTTP status (`error` when no answer came).
enum RequestMetrics {
    /// `imagepipe_storage_requests_total`: one request answered with `status`, or not answered (nil).
    static func request(service: String, method: String, status: Int?) {
        Counter(
            label: "imagepipe_storage_requests_total",
            dimensions: [("service", service), ("method", method), ("status", status.map(String.init) ?? "error")]
        )
        .increment()
    }

    /// `imagepipe_storage_retries_total`: one more attempt at a request that failed in a retryable way.
    static func retry(service: String) {
        Counter(label: "imagepipe_storage_retries_total", dimensions: [("service", service)]).increment()
    }
}
