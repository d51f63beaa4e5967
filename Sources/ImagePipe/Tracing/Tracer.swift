// Who decides which jobs are traced (the sampler) and where their spans go (the sink).

/// The process's tracer: its sampler and its sink. A FileHandler without one traces nothing and
/// pays nothing for it: no ids are drawn, no instants kept beyond those its timings take.
public final class Tracer: Sendable {
    /// Which traces are recorded, as `OTEL_TRACES_SAMPLER` names them.
    public enum Sampler: Sendable, Equatable {
        case alwaysOn
        case alwaysOff
        /// A fraction of traces, decided by the trace id so every process agrees on a trace.
        case ratio(Double)
        /// The producer's decision when a job carries one, else `root`'s.
        indirect case parentBased(root: Sampler)

        /// Whether a span in `trace`, whose parent (if any) is `parent`, is recorded.
        public func samples(_ trace: TraceID, parent: TraceParent?) -> Bool {
            switch self {
            case .alwaysOn: return true
            case .alwaysOff: return false
            case .ratio(let fraction):
                // OpenTelemetry's TraceIdRatioBased rule: the low 63 bits of the id's second half
                // against the fraction of 2^63.
                guard fraction < 1 else { return true }
                guard fraction > 0 else { return false }
                return trace.low & 0x7fff_ffff_ffff_ffff < UInt64(fraction * 9_223_372_036_854_775_808.0)
            case .parentBased(let root):
                if let parent { return parent.sampled }
                return root.samples(trace, parent: nil)
            }
        }
    }

    public let sampler: Sampler
    public let sink: any SpanSink

    public init(sampler: Sampler = .parentBased(root: .alwaysOn), sink: any SpanSink) {
        self.sampler = sampler
        self.sink = sink
    }

    /// A new job's trace, continuing `parent` when the job came with one (else `trace`, or a new
    /// one); nil when not sampled.
    public func startJob(parent: TraceParent?, trace given: TraceID? = nil, at start: ContinuousClock.Instant = .now) -> JobTrace? {
        let trace = parent?.traceID ?? given ?? TraceID.random()
        guard sampler.samples(trace, parent: parent) else { return nil }
        return JobTrace(traceID: trace, parent: parent?.spanID, start: start)
    }

    /// Hands finished spans to the sink.
    public func record(_ spans: [Span]) {
        guard !spans.isEmpty else { return }
        sink.record(spans)
    }
}

/// A traced job's identity and the spans its stages finished so far. It rides on the values that
/// cross every hand-off (``JobContext``, then ``JobResult``, then ``JobNotice``'s `traceparent`),
/// so no executor needs a task-local to keep it: whoever holds the job holds its trace.
public struct JobTrace: Sendable, Equatable {
    public let traceID: TraceID
    /// The job span's id: every stage's span is its child.
    public let spanID: SpanID
    /// The producer's span, when the job came with a `traceparent`.
    public let parent: SpanID?
    /// When the job span started.
    public let start: ContinuousClock.Instant
    /// The stages' finished spans, waiting for the job span to end.
    public internal(set) var spans: [Span] = []

    public init(traceID: TraceID, spanID: SpanID = .random(), parent: SpanID?, start: ContinuousClock.Instant) {
        self.traceID = traceID
        self.spanID = spanID
        self.parent = parent
        self.start = start
    }

    /// The job span's context, as the notification POST and the logs carry it.
    public var traceparent: TraceParent { TraceParent(traceID: traceID, spanID: spanID, sampled: true) }

    /// Adds a finished child span of the job span (or of `parent`, one of its own); returns its id.
    @discardableResult
    public mutating func add(
        _ name: String, from start: ContinuousClock.Instant, to end: ContinuousClock.Instant, kind: Span.Kind = .internal,
        parent: SpanID? = nil, attributes: [(String, Span.Value)] = [], status: Span.Status = .unset
    ) -> SpanID {
        let span = Span(
            name: name, kind: kind, traceID: traceID, parent: parent ?? spanID, start: WallClock.nanos(at: start),
            end: WallClock.nanos(at: end), attributes: attributes, status: status)
        spans.append(span)
        return span.spanID
    }

    /// Adds spans made elsewhere (a helper's steps) as they are.
    public mutating func add(_ made: [Span]) { spans.append(contentsOf: made) }

    /// The job span itself, ending at `end`, followed by every stage's span; the trace is spent.
    public func finished(
        _ name: String, kind: Span.Kind, at end: ContinuousClock.Instant, attributes: [(String, Span.Value)], status: Span.Status,
        links: [Span.Link] = []
    ) -> [Span] {
        let job = Span(
            name: name, kind: kind, traceID: traceID, spanID: spanID, parent: parent, start: WallClock.nanos(at: start),
            end: WallClock.nanos(at: end), attributes: attributes, links: links, status: status)
        return [job] + spans
    }
}
