// Reads the few text elements imagepipe needs from S3's small XML answers.
import Foundation
import ImagePipe

/// Pulls element text out of S3 responses (`<Code>`, `<Message>`, `<UploadId>`, `<ETag>`, and the
/// `<Contents>` entries of a listing).
///
/// Those answers are small, flat and machine-written; a full parser would pull libxml2 into every
/// build for four element names, so this reads `<Name>text</Name>` and decodes the five entities
/// and numeric references.
public enum XMLText {
    /// The text of the first `<name>` element, decoded; nil when absent.
    public static func first(_ name: String, in xml: String) -> String? {
        all(name, in: xml).first
    }

    /// The texts of every `<name>` element, in document order.
    public static func all(_ name: String, in xml: String) -> [String] {
        elements(name, in: xml).map(unescape)
    }

    /// The content of every `<name>` element as it is written, references not decoded: markup to
    /// look into with ``first(_:in:)``, e.g. each `<Contents>` of a listing.
    public static func elements(_ name: String, in xml: String) -> [String] {
        var results: [String] = []
        var rest = xml[...]
        let open = "<\(name)>", close = "</\(name)>"
        while let start = rest.range(of: open) {
            guard let end = rest.range(of: close, range: start.upperBound..<rest.endIndex) else { break }
            results.append(String(rest[start.upperBound..<end.lowerBound]))
            rest = rest[end.upperBound...]
        }
        return results
    }

    /// Text made safe to put between tags.
    public static func escape(_ text: String) -> String { text.markupEscaped }

    /// Decodes entity and character references.
    public static func unescape(_ text: String) -> String {
        guard text.contains("&") else { return text }
        var out = ""
        var index = text.startIndex
        while index < text.endIndex {
            let character = text[index]
            if character == "&", let semicolon = text[index...].firstIndex(of: ";"),
                text.distance(from: index, to: semicolon) <= 10
            {
                let entity = text[text.index(after: index)..<semicolon]
                if let decoded = decode(entity) {
                    out.append(decoded)
                    index = text.index(after: semicolon)
                    continue
                }
            }
            out.append(character)
            index = text.index(after: index)
        }
        return out
    }

    private static func decode(_ entity: Substring) -> Character? {
        switch entity {
        case "amp": return "&"
        case "lt": return "<"
        case "gt": return ">"
        case "quot": return "\""
        case "apos": return "'"
        default:
            guard entity.hasPrefix("#") else { return nil }
            let digits = entity.dropFirst()
            let value =
                digits.hasPrefix("x") || digits.hasPrefix("X")
                ? UInt32(digits.dropFirst(), radix: 16) : UInt32(digits, radix: 10)
            return value.flatMap(Unicode.Scalar.init).map(Character.init)
        }
    }
}
