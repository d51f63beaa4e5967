// swift-log handler writing one line per message to standard error through the shared console, as text or JSON.
import Foundation
import Logging

/// Logs on standard error, as `TIMESTAMP LEVEL message key=value ...` or one JSON object per line.
///
/// Values go into fields, never into the message (the job path's log calls pass them as metadata),
/// so a JSON line can be filtered on `source`, `error_code` or `total_ms` without parsing text.
/// Every line passes through ``SecretRedaction`` first.
struct ConsoleLogHandler: LogHandler {
    let label: String
    let format: LogFormat
    let redaction: SecretRedaction
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]

    init(label: String, logLevel: Logger.Level, format: LogFormat = .text, redaction: SecretRedaction = SecretRedaction()) {
        self.label = label
        self.logLevel = logLevel
        self.format = format
        self.redaction = redaction
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var merged = metadata
        if let extra = event.metadata { merged.merge(extra) { $1 } }
        let time = Self.timestamp()
        let message = redaction.apply("\(event.message)")
        merged = merged.mapValues(redaction.apply)
        let line =
            switch format {
            case .text: textLine(time: time, level: event.level, message: message, metadata: merged)
            case .json: jsonLine(time: time, level: event.level, message: message, metadata: merged)
            }
        Console.shared.line(line)
    }

    /// Now in RFC 3339, UTC, with milliseconds: `2026-05-01T12:34:56.789Z`.
    static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var parts = tm()
        var seconds = now.tv_sec
        gmtime_r(&seconds, &parts)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday,
            parts.tm_hour, parts.tm_min, parts.tm_sec, now.tv_nsec / 1_000_000)
    }
}
