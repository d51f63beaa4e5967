// A W3C trace context (`traceparent`): the trace a job belongs to and the span it continues, as producers, queues and receivers pass it on.
import Synchronization

/// One span's place in a trace, in the W3C Trace Context form
/// `00-<32 hex trace id>-<16 hex span id>-<2 hex flags>`: what `imagepipe enqueue --traceparent`
/// stores with a job, what the job span continues, and what the notification POST carries.
public struct TraceParent: Sendable, Hashable, CustomStringConvertible {
    /// The trace's 16 bytes, as two big-endian halves.
    public var traceID: TraceID
    /// The span's 8 bytes.
    public var spanID: SpanID
    /// Whether the caller recorded its span (flag bit 0): a parent-based sampler follows it.
    public var sampled: Bool

    /// A context from its parts.
    public init(traceID: TraceID, spanID: SpanID, sampled: Bool) {
        self.traceID = traceID
        self.spanID = spanID
        self.sampled = sampled
    }

    /// Reads a `traceparent` value; nil for anything the W3C rules say to ignore: a wrong length
    /// or character, version `ff`, an all-zero id. A later version is read by its first four
    /// fields, as the rules ask, and must then be followed by `-` or end there.
    public init?(_ text: String) {
        let bytes = Array(text.utf8)
        guard bytes.count >= 55, bytes[2] == UInt8(ascii: "-"), bytes[35] == UInt8(ascii: "-"), bytes[52] == UInt8(ascii: "-"),
            let version = Self.hex(bytes[0..<2]), version != 0xff,
            let high = Self.hex(bytes[3..<19]), let low = Self.hex(bytes[19..<35]),
            let span = Self.hex(bytes[36..<52]), let flags = Self.hex(bytes[53..<55])
        else { return nil }
        if version == 0 ? bytes.count != 55 : bytes.count > 55 && bytes[55] != UInt8(ascii: "-") { return nil }
        guard high | low != 0, span != 0 else { return nil }
        self.init(traceID: TraceID(high: high, low: low), spanID: SpanID(span), sampled: flags & 1 == 1)
    }

    /// The `traceparent` value, version 00.
    public var description: String { "00-\(traceID)-\(spanID)-\(sampled ? "01" : "00")" }

    /// Lower-case hex only: the W3C form allows no upper case.
    private static func hex(_ digits: ArraySlice<UInt8>) -> UInt64? {
        var value: UInt64 = 0
        for digit in digits {
            let nibble: UInt8
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = digit - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = digit - UInt8(ascii: "a") + 10
            default: return nil
            }
            value = value << 4 | UInt64(nibble)
        }
        return value
    }
}

/// A trace's 16-byte id.
public struct TraceID: Sendable, Hashable, CustomStringConvertible {
    public var high: UInt64
    public var low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// A random id (never all zero).
    public static func random() -> TraceID {
        while true {
            let id = TraceID(high: SpanIDs.next(), low: SpanIDs.next())
            if id.high | id.low != 0 { return id }
        }
    }

    /// 32 lower-case hex digits.
    public var description: String { hex16(high) + hex16(low) }

    /// Its 16 bytes, big-endian, as OTLP sends them.
    public var bytes: [UInt8] { bigEndianBytes(high) + bigEndianBytes(low) }
}

/// A span's 8-byte id.
public struct SpanID: Sendable, Hashable, CustomStringConvertible {
    public var value: UInt64

    public init(_ value: UInt64) { self.value = value }

    /// A random id (never zero).
    public static func random() -> SpanID {
        while true {
            let value = SpanIDs.next()
            if value != 0 { return SpanID(value) }
        }
    }

    /// 16 lower-case hex digits.
    public var description: String { hex16(value) }

    /// Its 8 bytes, big-endian, as OTLP sends them.
    public var bytes: [UInt8] { bigEndianBytes(value) }
}

/// Ids for spans and traces: SplitMix64 over a counter seeded once from the system's generator.
/// A traced job draws a dozen ids; one `getrandom` call each cost 2 % of the CPU per small image.
/// The mix is a bijection of the counter, so no two ids of a process repeat, and the seed makes
/// another process's different; ids need to be unique, not secret.
private enum SpanIDs {
    private static let counter: Atomic<UInt64> = {
        var generator = SystemRandomNumberGenerator()
        return Atomic(generator.next())
    }()

    static func next() -> UInt64 {
        var z = counter.wrappingAdd(0x9E37_79B9_7F4A_7C15, ordering: .relaxed).newValue
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

private func hex16(_ value: UInt64) -> String {
    let digits = String(value, radix: 16)
    return String(repeating: "0", count: 16 - digits.count) + digits
}

private func bigEndianBytes(_ value: UInt64) -> [UInt8] {
    (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * $0)) }
}
