// The text log line: time, level, message, then the metadata as key=value pairs sorted by key.
import Logging

extension ConsoleLogHandler {
    /// `TIME LEVEL message key=value ...`; a value with spaces, quotes, `=` or control characters is
    /// quoted, logfmt-style (a source name may hold any of them: quoted, it cannot forge a line).
    func textLine(time: String, level: Logger.Level, message: String, metadata: Logger.Metadata) -> String {
        var text = "\(time) \(level.rawValue) \(message)"
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            text += " \(key)=\(Self.textValue(value))"
        }
        return text
    }

    static func textValue(_ value: Logger.Metadata.Value) -> String {
        let text = "\(value)"
        let needsQuotes = text.unicodeScalars.contains {
            $0 == " " || $0 == "\"" || $0 == "=" || $0.value < 0x20 || $0.value == 0x7F || $0.properties.isWhitespace
        }
        guard text.isEmpty || needsQuotes else { return text }
        return text.doubleQuoted
    }
}
