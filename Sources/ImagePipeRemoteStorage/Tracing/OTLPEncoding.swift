// Spans as an OTLP ExportTraceServiceRequest in protobuf's wire format, written by hand: six messages, no generated code.
import Foundation
import ImagePipe

/// The protobuf form of `opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest` for
/// one resource and one instrumentation scope. The field numbers are the OTLP protocol's
/// (opentelemetry-proto's trace.proto, common.proto, resource.proto); the tests decode what this
/// writes with the Python package generated from those files.
enum OTLPEncoding {
    /// The request for `spans`, from the process described by `resource`.
    static func request(_ spans: [Span], resource: [Span.Attribute], scope: (name: String, version: String)) -> Data {
        var scopeSpans = Message()
        scopeSpans.message(1) {  // InstrumentationScope
            $0.string(1, scope.name)
            $0.string(2, scope.version)
        }
        for span in spans { scopeSpans.message(2) { encode(span, into: &$0) } }

        var resourceSpans = Message()
        resourceSpans.message(1) { resourceMessage in  // Resource
            for attribute in resource { resourceMessage.message(1) { encode(attribute, into: &$0) } }
        }
        resourceSpans.embed(2, scopeSpans)

        var request = Message()
        request.embed(1, resourceSpans)
        return Data(request.bytes)
    }

    private static func encode(_ span: Span, into message: inout Message) {
        message.bytes(1, span.traceID.bytes)
        message.bytes(2, span.spanID.bytes)
        if let parent = span.parent { message.bytes(4, parent.bytes) }
        message.string(5, span.name)
        message.varint(6, UInt64(span.kind.rawValue))
        message.fixed64(7, span.start)
        message.fixed64(8, span.end)
        for attribute in span.attributes { message.message(9) { encode(attribute, into: &$0) } }
        for link in span.links {
            message.message(13) {
                $0.bytes(1, link.traceID.bytes)
                $0.bytes(2, link.spanID.bytes)
            }
        }
        switch span.status {
        case .unset: break
        case .ok: message.message(15) { $0.varint(3, 1) }
        case .error(let reason):
            message.message(15) {
                $0.string(2, String(reason.prefix(1024)))
                $0.varint(3, 2)
            }
        }
        // The W3C trace flags: every span imagepipe records is sampled.
        message.fixed32(16, 1)
    }

    private static func encode(_ attribute: Span.Attribute, into message: inout Message) {
        message.string(1, attribute.key)
        message.message(2) { value in  // AnyValue
            switch attribute.value {
            case .string(let text): value.string(1, text, always: true)
            case .bool(let flag): value.varint(2, flag ? 1 : 0, always: true)
            case .int(let number): value.varint(3, UInt64(bitPattern: Int64(number)), always: true)
            case .double(let number): value.fixed64(4, number.bitPattern, always: true)
            }
        }
    }

    /// A protobuf message being written: fields in order, each a key (number and wire type) and its value.
    struct Message {
        var bytes: [UInt8] = []

        mutating func varint(_ field: Int, _ value: UInt64, always: Bool = false) {
            guard value != 0 || always else { return }
            key(field, 0)
            raw(value)
        }

        mutating func fixed64(_ field: Int, _ value: UInt64, always: Bool = false) {
            guard value != 0 || always else { return }
            key(field, 1)
            for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
        }

        mutating func fixed32(_ field: Int, _ value: UInt32) {
            key(field, 5)
            for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
        }

        mutating func bytes(_ field: Int, _ value: [UInt8]) {
            key(field, 2)
            raw(UInt64(value.count))
            bytes.append(contentsOf: value)
        }

        mutating func string(_ field: Int, _ value: String, always: Bool = false) {
            guard !value.isEmpty || always else { return }
            bytes(field, Array(value.utf8))
        }

        mutating func embed(_ field: Int, _ message: Message) { bytes(field, message.bytes) }

        mutating func message(_ field: Int, _ build: (inout Message) -> Void) {
            var inner = Message()
            build(&inner)
            embed(field, inner)
        }

        private mutating func key(_ field: Int, _ wireType: UInt64) { raw(UInt64(field) << 3 | wireType) }

        private mutating func raw(_ value: UInt64) {
            var value = value
            while value >= 0x80 {
                bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
                value >>= 7
            }
            bytes.append(UInt8(value))
        }
    }
}
