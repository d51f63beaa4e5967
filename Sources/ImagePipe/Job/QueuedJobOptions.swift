// What a producer may say about one queued job beside its source, as JSON: its focal point.
import Foundation

/// A queued job's options, stored beside its source as a JSON object (the PostgreSQL queue's
/// `options` column): `{"focus": [0.3, 0.7], "traceparent": "00-…-01"}`. Keys imagepipe does not
/// know are left alone, so a producer may write options for a newer worker.
public struct QueuedJobOptions: Sendable, Hashable {
    /// The point `cover` crops keep (``FocalPoint``), or nil.
    public var focus: FocalPoint?
    /// The producer's span (W3C `traceparent`), which the job span continues. One that is not a
    /// valid W3C value is ignored, as the W3C rules ask: a trace context never fails an image's job.
    public var traceparent: TraceParent?

    /// Options with nothing set.
    public init(focus: FocalPoint? = nil, traceparent: TraceParent? = nil) {
        self.focus = focus
        self.traceparent = traceparent
    }

    /// Reads the JSON object; an options value that cannot be used fails the job with `invalid_job_options`.
    public init(json text: String) throws(ImagePipeError) {
        func bad(_ why: String) -> ImagePipeError { ImagePipeError(.invalidJobOptions, "the job's options \(why)") }
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed]) as? [String: Any] else {
            throw bad("are not a JSON object: \(text.prefix(200))")
        }
        self.init()
        if let text = object["traceparent"] as? String { traceparent = TraceParent(text) }
        guard let value = object["focus"], !(value is NSNull) else { return }
        // Decoded as numbers, so `true` or "0.3" is refused rather than read as one.
        struct Focus: Decodable { var focus: [Double] }
        guard let pair = try? JSONDecoder().decode(Focus.self, from: Data(text.utf8)).focus, pair.count == 2,
            let point = FocalPoint(x: pair[0], y: pair[1])
        else {
            throw bad("give focus as [X, Y], two fractions of the width and height from 0 to 1, not \(Self.describe(value))")
        }
        focus = point
    }

    /// The JSON object, keys sorted; `{}` when nothing is set.
    public var json: String {
        var fields: [String] = []
        if let focus { fields.append("\"focus\":[\(focus.x),\(focus.y)]") }
        if let traceparent { fields.append("\"traceparent\":\"\(traceparent)\"") }
        return "{" + fields.joined(separator: ",") + "}"
    }

    private static func describe(_ value: Any) -> String {
        guard let data = try? JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed]) else { return "\(value)" }
        return String(decoding: data.prefix(200), as: UTF8.self)
    }
}
