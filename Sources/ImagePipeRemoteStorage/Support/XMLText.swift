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
    ///
    /// Tags are found in the UTF-8 bytes: matched as characters, a tag followed by a combining mark
    /// (`<Message>\u{301}…`) was not found, as its `>` and the mark are one character.
    public static func elements(_ name: String, in xml: String) -> [String] {
        var results: [String] = []
        let bytes = Array(xml.utf8), open = Array("<\(name)>".utf8), close = Array("</\(name)>".utf8)
        var from = 0
        while let start = find(open, in: bytes, from: from) {
            guard let end = find(close, in: bytes, from: start + open.count) else { break }
            results.append(String(decoding: bytes[(start + open.count)..<end], as: UTF8.self))
            from = end + close.count
        }
        return results
    }

    /// Where `pattern` first starts in `bytes` at or after `from`.
    private static func find(_ pattern: [UInt8], in bytes: [UInt8], from: Int) -> Int? {
        guard let first = pattern.first, bytes.count >= pattern.count else { return nil }
        var index = from
        while index <= bytes.count - pattern.count {
            guard let candidate = bytes[index...(bytes.count - pattern.count)].firstIndex(of: first) else { return nil }
            if bytes[candidate..<(candidate + pattern.count)].elementsEqual(pattern) { return candidate }
            index = candidate + 1
        }
        return nil
    }

    /// Text made safe to put between tags.
    public static func escape(_ text: String) -> String { text.markupEscaped }

    /// Decodes entity and character references.
    ///
    /// Read scalar by scalar, looking at most 10 ahead for a reference's `;`: searching the rest of
    /// the text from every `&` made a text of many `&` and no `;` cost its length squared.
    public static func unescape(_ text: String) -> String {
        guard text.utf8.contains(UInt8(ascii: "&")) else { return text }
        let scalars = Array(text.unicodeScalars)
        var out = String.UnicodeScalarView()
        var index = 0
        while index < scalars.count {
            if scalars[index] == "&",
                let semicolon = scalars[(index + 1)..<min(index + 11, scalars.count)].firstIndex(of: ";"),
                let decoded = decode(String(String.UnicodeScalarView(scalars[(index + 1)..<semicolon])))
            {
                out.append(decoded)
                index = semicolon + 1
                continue
            }
            out.append(scalars[index])
            index += 1
        }
        return String(out)
    }

    private static func decode(_ entity: String) -> Unicode.Scalar? {
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
            return value.flatMap(Unicode.Scalar.init)
        }
    }
}
