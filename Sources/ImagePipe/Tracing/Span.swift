// One finished span as the exporter sends it: names, ids, wall-clock times, attributes, links, status.
import Foundation

/// A finished span. Spans are made whole once their end is known and handed to the tracer's
/// ``SpanSink``; nothing in imagepipe holds an open span across a hand-off, only the ids and
/// instants a ``JobTrace`` carries.
public struct Span: Sendable, Equatable {
    /// OpenTelemetry's span kinds, as OTLP numbers them.
    public enum Kind: Int, Sendable {
        case `internal` = 1, server = 2, client = 3, producer = 4, consumer = 5
    }

    /// An attribute's value.
    public enum Value: Sendable, Equatable {
        case string(String)
        case int(Int)
        case double(Double)
        case bool(Bool)
    }

    /// One attribute.
    public struct Attribute: Sendable, Equatable {
        public var key: String
        public var value: Value
        public init(_ key: String, _ value: Value) {
            self.key = key
            self.value = value
        }
    }

    /// Whether the work failed.
    public enum Status: Sendable, Equatable {
        case unset
        case ok
        case error(String)
    }

    /// Another span this one is about (a flush round that settled many jobs).
    public struct Link: Sendable, Equatable {
        public var traceID: TraceID
        public var spanID: SpanID
        public init(traceID: TraceID, spanID: SpanID) {
            self.traceID = traceID
            self.spanID = spanID
        }
    }

    public var name: String
    public var kind: Kind
    public var traceID: TraceID
    public var spanID: SpanID
    /// The span it is a child of; nil for a trace's root.
    public var parent: SpanID?
    /// Nanoseconds since 1970, UTC.
    public var start: UInt64
    public var end: UInt64
    public var attributes: [Attribute]
    public var links: [Link]
    public var status: Status

    /// A span from its parts; its end is never before its start.
    public init(
        name: String, kind: Kind = .internal, traceID: TraceID, spanID: SpanID = .random(), parent: SpanID?, start: UInt64, end: UInt64,
        attributes: [(String, Value)] = [], links: [Link] = [], status: Status = .unset
    ) {
        self.name = name
        self.kind = kind
        self.traceID = traceID
        self.spanID = spanID
        self.parent = parent
        self.start = start
        self.end = max(start, end)
        self.attributes = attributes.map { Attribute($0.0, $0.1) }
        self.links = links
        self.status = status
    }
}

/// Where finished spans go: the OTLP exporter, or a test's list. ``record(_:)`` is called on
/// whatever thread finished the spans (a pipeline lane, the worker loop, a notifier lane) and
/// must never block or wait for the network.
public protocol SpanSink: Sendable {
    func record(_ spans: [Span])
}

/// Wall-clock time for spans, read off the monotonic instants the stages already take: one reading
/// of both clocks when first asked, so every span of a process is on one time line and a clock
/// step under a job does not turn its spans inside out.
public enum WallClock {
    private static let anchor: (instant: ContinuousClock.Instant, nanos: UInt64) = {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return (ContinuousClock.now, UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec))
    }()

    /// Nanoseconds since 1970 at `instant`.
    public static func nanos(at instant: ContinuousClock.Instant) -> UInt64 {
        let (seconds, attoseconds) = (instant - anchor.instant).components
        let offset = seconds * 1_000_000_000 + attoseconds / 1_000_000_000
        return offset >= 0 ? anchor.nanos &+ UInt64(offset) : anchor.nanos &- UInt64(-offset)
    }

    /// Nanoseconds since 1970 now.
    public static var now: UInt64 { nanos(at: .now) }
}
