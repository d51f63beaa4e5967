// The text log line: time, level, message, then the metadata as key=value pairs sorted by key.
import Logging

extension ConsoleLogHandler {
    /// `TIME LEVEL message key=value ...`; a value with spaces, quotes or `=` is quoted, logfmt-style.
    func textLine(time: String, level: Logger.Level, message: String, metadata: Logger.Metadata) -> String {
        var text = "\(time) \(level.rawValue) \(message)"
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            text += " \(key)=\(Self.textValue(value))"
        }
        return text
    }

    static func textValue(_ value: Logger.Metadata.Value) -> String {
        let text = "\(value)"
        guard text.isEmpty || text.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" || $0.isNewline || $0 == "\t" }) else {
            return text
        }
        return text.doubleQuoted
    }
}
