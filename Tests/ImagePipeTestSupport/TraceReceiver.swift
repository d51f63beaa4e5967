// The OTLP/HTTP trace receiver: a Python server started per test that decodes every request with opentelemetry-proto.
public import Foundation

/// `otlp_receiver.py`: records every span the protocol's own parser reads from a request, and can
/// answer 503 or hold requests to play a collector that is down or slow.
public final class TraceReceiver: Sendable {
    /// One span as the receiver decoded it.
    public struct ReceivedSpan: @unchecked Sendable {
        public var traceID: String
        public var spanID: String
        public var parentSpanID: String
        public var name: String
        /// OTLP's numbers: 1 internal, 3 client, 5 consumer.
        public var kind: Int
        public var start: UInt64
        public var end: UInt64
        public var attributes: [String: Any]
        public var links: [(traceID: String, spanID: String)]
        /// 0 unset, 2 error.
        public var statusCode: Int
        public var resource: [String: Any]

        public func string(_ key: String) -> String? { attributes[key] as? String }
        public func int(_ key: String) -> Int? { (attributes[key] as? NSNumber)?.intValue ?? (attributes[key] as? String).flatMap { Int($0) } }
    }

    /// What arrived so far.
    public struct State {
        public var requests: Int
        public var spans: [ReceivedSpan]
        public var headers: [[String: String]]
        /// Requests the protocol's parser refused.
        public var errors: [String]
    }

    let process: HelperProcess
    /// The folder of the receiver's script.
    static let scripts = URL(fileURLWithPath: #filePath).deletingLastPathComponent().path + "/python"

    /// Starts a receiver; `fail` first requests are answered 503, each is held `hangSeconds` first.
    public init(fail: Int = 0, hangSeconds: Double = 0) throws {
        process = try HelperProcess("otlp_receiver.py", in: Self.scripts, ["--fail", "\(fail)", "--hang-seconds", "\(hangSeconds)"])
    }

    /// The base endpoint, as OTEL_EXPORTER_OTLP_ENDPOINT takes it.
    public var endpoint: String { "http://127.0.0.1:\(process.port)" }

    /// The variables that send a run's spans here, sent a fifth of a second after they end.
    public var environment: [String: String] { ["OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_BSP_SCHEDULE_DELAY": "200"] }

    /// What arrived so far.
    public func state() throws -> State {
        let answer = LoopbackHTTP.get("http://127.0.0.1:\(process.port)/_receiver/state")
        guard answer.status == 200 else { throw HelperError("the OTLP receiver did not answer: \(answer)") }
        let object = try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any] ?? [:]
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
    public func children(of span: TraceReceiver.ReceivedSpan) -> [TraceReceiver.ReceivedSpan] {
        filter { $0.parentSpanID == span.spanID && $0.traceID == span.traceID }
    }

    /// The names of `span`'s children, counted.
    public func childNames(of span: TraceReceiver.ReceivedSpan) -> [String: Int] {
        children(of: span).reduce(into: [:]) { $0[$1.name, default: 0] += 1 }
    }
}
