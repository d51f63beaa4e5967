// The one JSON style of imagepipe's records: one compact line, keys sorted, slashes unescaped.
public import Foundation

/// Encodes manifest lines and queue records alike, so every record can be read the same way
/// (`jq`, `grep`, a line-by-line reader).
public enum JSONLine {
    /// `value` as one line of JSON, without a trailing newline.
    public static func encode(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // The records are plain values; encoding them cannot fail.
        let data = try! encoder.encode(value)
        return String(decoding: data, as: UTF8.self)
    }

    /// The time as RFC 3339 in UTC with milliseconds, e.g. `2024-05-01T09:30:12.345Z`.
    public static func timestamp(_ date: Date = Date()) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}
