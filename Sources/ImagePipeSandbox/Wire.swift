// The byte layout of the messages between a worker and its image helpers: small, fixed and checked.
import Foundation

/// Writes a message: little-endian integers, doubles by their bits, strings and blobs after their
/// length. A hand-written layout rather than JSON: a job's two messages cost microseconds, which
/// matters where a small image takes a millisecond (docs/performance.md, "Image helpers").
struct WireWriter {
    private(set) var bytes: [UInt8] = []

    init(kind: UInt8) {
        bytes.reserveCapacity(256)
        bytes.append(kind)
    }

    mutating func byte(_ value: UInt8) { bytes.append(value) }

    mutating func bool(_ value: Bool) { bytes.append(value ? 1 : 0) }

    mutating func int(_ value: Int) {
        withUnsafeBytes(of: Int64(value).littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func double(_ value: Double) { int(Int(Int64(bitPattern: value.bitPattern))) }

    mutating func nonce(_ value: UInt64) { int(Int(Int64(bitPattern: value))) }

    mutating func string(_ value: String) { blob(Array(value.utf8)) }

    mutating func blob(_ value: [UInt8]) {
        int(value.count)
        bytes.append(contentsOf: value)
    }

    mutating func optional<T>(_ value: T?, _ write: (inout WireWriter, T) -> Void) {
        bool(value != nil)
        if let value { write(&self, value) }
    }
}

/// Reads a message written by ``WireWriter``. Every read is checked against the bytes there are:
/// a worker reads what a helper sends, and a helper that a hostile image took over may send anything.
package struct WireReader {
    /// What was wrong with a message.
    package struct Malformed: Error, CustomStringConvertible {
        package let description: String
    }

    /// The longest string or blob a message may hold: far over any name, reason or setup.
    static let maxBlob = 16 << 20

    private let bytes: [UInt8]
    private var offset: Int
    /// The message's kind, its first byte.
    let kind: UInt8

    init(_ bytes: [UInt8]) throws(Malformed) {
        guard let kind = bytes.first else { throw Malformed(description: "an empty message") }
        self.bytes = bytes
        self.kind = kind
        self.offset = 1
    }

    mutating func byte() throws(Malformed) -> UInt8 {
        guard offset < bytes.count else { throw Malformed(description: "a message cut short") }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func bool() throws(Malformed) -> Bool {
        switch try byte() {
        case 0: return false
        case 1: return true
        case let other: throw Malformed(description: "\(other) where a yes or no was expected")
        }
    }

    mutating func int() throws(Malformed) -> Int {
        guard bytes.count - offset >= 8 else { throw Malformed(description: "a message cut short") }
        var value: UInt64 = 0
        for index in 0..<8 { value |= UInt64(bytes[offset + index]) << (8 * UInt64(index)) }
        offset += 8
        return Int(Int64(bitPattern: value))
    }

    /// An integer from `range`, else the message is refused.
    mutating func int(in range: ClosedRange<Int>, _ what: String) throws(Malformed) -> Int {
        let value = try int()
        guard range.contains(value) else { throw Malformed(description: "\(what) \(value) out of range") }
        return value
    }

    mutating func double() throws(Malformed) -> Double { Double(bitPattern: UInt64(bitPattern: Int64(try int()))) }

    mutating func nonce() throws(Malformed) -> UInt64 { UInt64(bitPattern: Int64(try int())) }

    mutating func blob() throws(Malformed) -> [UInt8] {
        let count = try int(in: 0...Self.maxBlob, "a length of")
        guard bytes.count - offset >= count else { throw Malformed(description: "a message cut short") }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    mutating func string() throws(Malformed) -> String {
        let utf8 = try blob()
        guard let string = String(validating: utf8, as: UTF8.self) else { throw Malformed(description: "a string that is not UTF-8") }
        return string
    }

    mutating func optional<T>(_ read: (inout WireReader) throws(Malformed) -> T) throws(Malformed) -> T? {
        try bool() ? try read(&self) : nil
    }

    /// Refuses bytes left over after the last field: a message is read whole or not at all.
    func end() throws(Malformed) {
        guard offset == bytes.count else { throw Malformed(description: "\(bytes.count - offset) bytes after the message") }
    }
}
