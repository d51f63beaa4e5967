// The OTLP/HTTP trace receiver: a Python server started per test that decodes every request with opentelemetry-proto.
import Foundation
import ImagePipeRemoteStorage
import ImagePipeTestSupport

/// `otlp_receiver.py`: records every span the protocol's own parser reads from a request, and can
/// answer 503 or hold requests to play a collector that is down or slow.
final class TraceReceiver: Sendable {
    /// One span as the receiver decoded it.
    struct ReceivedSpan: @unchecked Sendable {
        var traceID: String
        var spanID: String
        var parentSpanID: String
        var name: String
        /// OTLP's numbers: 1 internal, 3 client, 5 consumer.
        var kind: Int
        var start: UInt64
        var end: UInt64
        var attributes: [String: Any]
        var links: [(traceID: String, spanID: String)]
        /// 0 unset, 2 error.
        var statusCode: Int
        var resource: [String: Any]

        func string(_ key: String) -> String? { attributes[key] as? String }
        func int(_ key: String) -> Int? { (attributes[key] as? NSNumber)?.intValue ?? (attributes[key] as? String).flatMap { Int($0) } }
    }

    /// What arrived so far.
    struct State {
        var requests: Int
        var spans: [ReceivedSpan]
        var headers: [[String: String]]
        /// Requests the protocol's parser refused.
        var errors: [String]
    }

    let process: HelperProcess

    init(fail: Int = 0, hangSeconds: Double = 0) throws {
        process = try HelperProcess("otlp_receiver.py", ["--fail", "\(fail)", "--hang-seconds", "\(hangSeconds)"])
    }

    /// The base endpoint, as OTEL_EXPORTER_OTLP_ENDPOINT takes it.
    var endpoint: String { "http://127.0.0.1:\(process.port)" }

    /// The variables that send a run's spans here, sent a fifth of a second after they end.
    var environment: [String: String] { ["OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_BSP_SCHEDULE_DELAY": "200"] }

    func state() throws -> State {
        let response = try CurlHTTPClient().perform(HTTPRequest(method: "GET", url: "http://127.0.0.1:\(process.port)/_receiver/state"))
        let object = try JSONSerialization.jsonObject(with: response.body) as? [String: Any] ?? [:]
        let spans = (object["spans"] as? [[String: Any]] ?? []).map { entry in
            ReceivedSpan(
                traceID: entry["trace_id"] as? String ?? "", spanID: entry["span_id"] as? String ?? "",
                parentSpanID: entry["parent_span_id"] as? String ?? "", name: entry["name"] as? String ?? "",
                kind: (entry["kind"] as? NSNumber)?.intValue ?? 0, start: (entry["start"] as? NSNumber)?.uint64Value ?? 0,
                end: (entry["end"] as? NSNumber)?.uint64Value ?? 0, attributes: entry["attributes"] as? [String: Any] ?? [:],
                links: (entry["links"] as? [[String: String]] ?? []).map { ($0["trace_id"] ?? "", $0["span_id"] ?? "") },
                statusCode: (entry["status_code"] as? NSNumber)?.intValue ?? 0, resource: entry["resource"] as? [String: Any] ?? [:])
        }
        return State(
            requests: (object["requests"] as? NSNumber)?.intValue ?? 0, spans: spans,
            headers: object["headers"] as? [[String: String]] ?? [], errors: object["errors"] as? [String] ?? [])
    }
}

extension [TraceReceiver.ReceivedSpan] {
    /// The spans whose parent is `span`.
    func children(of span: TraceReceiver.ReceivedSpan) -> [TraceReceiver.ReceivedSpan] {
        filter { $0.parentSpanID == span.spanID && $0.traceID == span.traceID }
    }

    /// The names of `span`'s children, counted.
    func childNames(of span: TraceReceiver.ReceivedSpan) -> [String: Int] {
        children(of: span).reduce(into: [:]) { $0[$1.name, default: 0] += 1 }
    }
}
