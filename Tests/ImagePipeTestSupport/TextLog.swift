// Finding a line of imagepipe's text log by its level, message and fields (`key=value`, quoted when the value needs it).
import Foundation

/// Reads the text log format: `TIME LEVEL message key=value ...`.
public enum TextLog {
    /// Whether `log` has a line at `level` whose message is `message` and that carries every field
    /// of `fields` with exactly that value.
    public static func hasLine(_ log: String, _ level: String, _ message: String, _ fields: [String: String] = [:]) -> Bool {
        log.split(separator: "\n").contains { line in
            guard let range = line.range(of: " \(level) \(message)"),
                line[range.upperBound...].isEmpty || line[range.upperBound...].hasPrefix(" ")
            else { return false }
            let rest = " " + line[range.upperBound...] + " "
            return fields.allSatisfy { key, value in rest.contains(" \(key)=\(rendered(value)) ") }
        }
    }

    /// A value as the text format writes it: quoted (with `"` and `\` escaped) when it has a space,
    /// a quote or `=`, or is empty.
    public static func rendered(_ value: String) -> String {
        guard value.isEmpty || value.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" || $0.isNewline || $0 == "\t" }) else {
            return value
        }
        return "\""
            + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n") + "\""
    }
}
