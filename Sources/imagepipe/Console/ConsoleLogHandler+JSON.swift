// The JSON log line: one object with time, level, message and label first, then every metadata field.
import Logging

extension ConsoleLogHandler {
    /// The fields every line has; metadata under one of these names is written as `meta_NAME`.
    static let reservedFields: Set<String> = ["time", "level", "message", "label"]

    /// One JSON object on one line. Numbers and booleans in metadata (`.stringConvertible`) stay
    /// numbers and booleans; nested dictionaries and arrays stay objects and arrays.
    func jsonLine(time: String, level: Logger.Level, message: String, metadata: Logger.Metadata) -> String {
        var json =
            "{\"time\":" + time.doubleQuoted + ",\"level\":" + level.rawValue.doubleQuoted
            + ",\"message\":" + message.doubleQuoted + ",\"label\":" + label.doubleQuoted
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            let name = Self.reservedFields.contains(key) ? "meta_" + key : key
            json += "," + name.doubleQuoted + ":" + Self.jsonValue(value)
        }
        return json + "}"
    }

    static func jsonValue(_ value: Logger.Metadata.Value) -> String {
        switch value {
        case .string(let text):
            return text.doubleQuoted
        case .stringConvertible(let convertible):
            switch convertible {
            case let flag as Bool: return flag ? "true" : "false"
            case let number as any BinaryInteger: return "\(number)"
            case let number as Double where number.isFinite: return "\(number)"
            case let number as Float where number.isFinite: return "\(number)"
            default: return convertible.description.doubleQuoted
            }
        case .dictionary(let dictionary):
            return "{" + dictionary.sorted { $0.key < $1.key }.map { $0.key.doubleQuoted + ":" + jsonValue($0.value) }.joined(separator: ",") + "}"
        case .array(let values):
            return "[" + values.map(jsonValue).joined(separator: ",") + "]"
        }
    }
}
