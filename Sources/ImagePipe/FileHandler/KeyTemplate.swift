// Output keys from a template such as `{dir}/{stem}-{variant}.{ext}`, never escaping the destination.

/// A template for output keys.
///
/// Placeholders: `{dir}` (the source's directory relative to the batch or inbox root, empty at the
/// top), `{stem}` (file name without its extension), `{variant}`, `{ext}` (`jpg`, `webp`, `avif`,
/// `png`), `{hash}` (first 16 hex digits of the source's SHA-256), `{sha256}` (all 64) and
/// `{srcext}` (the source's own extension, lowercased). A `{dir}/` segment vanishes when the
/// directory is empty, so top-level sources get no leading slash.
public struct KeyTemplate: Sendable, Hashable, CustomStringConvertible {
    /// The default template.
    public static let `default` = try! KeyTemplate("{dir}/{stem}-{variant}.{ext}")

    /// The placeholders a template may use.
    public static let placeholders: Set<String> = ["dir", "stem", "variant", "ext", "hash", "sha256", "srcext"]

    /// The template text.
    public let text: String

    /// Parses and checks a template: known placeholders only, balanced braces, relative.
    public init(_ text: String) throws(ImagePipeError) {
        func bad(_ why: String) -> ImagePipeError { .configuration("invalid --key template '\(text)': \(why)") }
        guard !text.isEmpty else { throw bad("it is empty") }
        guard text.utf8.first != Self.slash else { throw bad("keys are relative to the destination; remove the leading '/'") }
        guard !Self.segments(text).contains(where: { $0.elementsEqual("..".utf8) || $0.elementsEqual(".".utf8) }) else {
            throw bad("'..' and '.' segments would leave or blur the destination")
        }
        var rest = Substring(text)
        var usesVariant = false
        while let open = rest.firstIndex(where: { $0 == "{" || $0 == "}" }) {
            guard rest[open] == "{" else { throw bad("unbalanced '}'") }
            guard let close = rest[open...].firstIndex(of: "}") else { throw bad("unbalanced '{'") }
            let name = String(rest[rest.index(after: open)..<close])
            guard Self.placeholders.contains(name) else {
                throw bad("unknown placeholder {\(name)}; use \(Self.placeholders.sorted().map { "{\($0)}" }.joined(separator: ", "))")
            }
            if name == "variant" { usesVariant = true }
            rest = rest[rest.index(after: close)...]
        }
        guard usesVariant else { throw bad("it must contain {variant}, or every variant would get the same key") }
        self.text = text
    }

    public var description: String { text }

    /// Whether the key depends on the source's content hash (and so cannot be known before reading it).
    public var usesHash: Bool { text.contains("{hash}") || text.contains("{sha256}") }

    /// The values a key is built from.
    public struct Values: Sendable {
        /// Directory relative to the root, without trailing slash; empty at the top. A name with a
        /// leading slash keeps everything before its last segment, slashes included (`//a.jpg`
        /// gives `//`), so its keys are refused or at least never another name's.
        public var dir: String
        /// File name without its last extension.
        public var stem: String
        /// The source's extension, lowercased, without the dot.
        public var sourceExtension: String
        /// Hex SHA-256 of the source, when known.
        public var sha256: String?

        /// Creates values.
        public init(dir: String, stem: String, sourceExtension: String, sha256: String?) {
            self.dir = dir
            self.stem = stem
            self.sourceExtension = sourceExtension
            self.sha256 = sha256
        }

        /// Splits a relative source path such as `2024/trip/IMG 1.HEIC` into its parts. Nothing is
        /// cleaned up: a name with a leading `/` (an object key `orig//a.jpg` listed under `orig/`)
        /// keeps everything before its last segment, slash included, as its `{dir}`, so a key made
        /// from it is refused rather than taken for `a.jpg`'s. With the slash left off, `//a.jpg` and
        /// `/a.jpg` both had the `{dir}` `/` and shared keys (the key-template fuzz target found it).
        public init(relativePath: String, sha256: String?) {
            // Cut at `/` and `.` scalars, not characters: a `/` and a combining mark after it are one
            // character, and a name cut at characters kept such a slash inside its stem.
            let scalars = relativePath.unicodeScalars
            let slash = scalars.lastIndex(of: "/")
            let leading = scalars.first == "/"
            dir = slash.map { leading ? String(scalars[...$0]) : String(scalars[..<$0]) } ?? ""
            let name = slash.map { scalars[scalars.index(after: $0)...] } ?? scalars[...]
            if let dot = name.lastIndex(of: "."), dot != name.startIndex {
                stem = String(name[..<dot])
                sourceExtension = String(name[name.index(after: dot)...]).lowercased()
            } else {
                stem = String(name)
                sourceExtension = ""
            }
            self.sha256 = sha256
        }
    }

    /// The key for one variant, checked so that it stays inside the destination.
    public func key(for values: Values, variant: String, ext: String) throws(ImagePipeError) -> String {
        var result = ""
        var rest = Substring(text)
        while let open = rest.firstIndex(of: "{") {
            result += rest[..<open]
            let close = rest[open...].firstIndex(of: "}")!
            let name = rest[rest.index(after: open)..<close]
            rest = rest[rest.index(after: close)...]
            switch name {
            case "dir":
                if values.dir.isEmpty, rest.unicodeScalars.first == "/" {
                    rest = Substring(rest.unicodeScalars.dropFirst())
                } else {
                    result += values.dir
                }
            case "stem": result += values.stem
            case "variant": result += variant
            case "ext": result += ext
            case "srcext": result += values.sourceExtension
            case "hash", "sha256":
                guard let sha = values.sha256 else {
                    throw ImagePipeError(.invalidKey, "the key template uses {\(name)} but the source hash is unknown")
                }
                result += name == "hash" ? String(sha.prefix(16)) : sha
            default: preconditionFailure("placeholder checked at init")
            }
        }
        result += rest
        try Self.validate(key: result)
        return result
    }

    /// Rejects keys that are empty, absolute, contain `.` or `..` segments, empty segments or
    /// control characters (U+0000 to U+001F and U+007F), or are longer than the 1024 bytes object
    /// stores accept. Nothing is cleaned up instead: `a/./b` and `a//b` would become `a/b`, another
    /// source's key, and a control character (a newline in a file name) has no place in a key that
    /// ends up in logs, manifests and HTML.
    public static func validate(key: String) throws(ImagePipeError) {
        func bad(_ why: String) -> ImagePipeError {
            ImagePipeError(.invalidKey, "invalid output key '\(escaped(key))': \(why)")
        }
        guard !key.isEmpty else { throw bad("it is empty") }
        guard key.utf8.first != slash else { throw bad("absolute keys would escape the destination") }
        guard key.utf8.count <= 1024 else { throw bad("longer than 1024 bytes") }
        if let control = key.unicodeScalars.first(where: isControl) {
            throw bad(control.value == 0 ? "contains a NUL byte" : "contains the control character U+\(hex(control))")
        }
        for segment in segments(key) {
            if segment.elementsEqual("..".utf8) { throw bad("'..' would escape the destination") }
            if segment.elementsEqual(".".utf8) || segment.isEmpty { throw bad("empty or '.' path segment") }
        }
    }

    private static let slash = UInt8(ascii: "/")

    /// C0 controls and DEL: a key may hold any other character.
    private static func isControl(_ scalar: Unicode.Scalar) -> Bool { scalar.value < 0x20 || scalar.value == 0x7F }

    private static func hex(_ scalar: Unicode.Scalar) -> String {
        let digits = String(scalar.value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    /// The key as an error message shows it: control characters as `\u{XX}`, so a hostile name
    /// cannot break a log line.
    private static func escaped(_ key: String) -> String {
        var text = ""
        for scalar in key.unicodeScalars {
            if isControl(scalar) {
                text += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            } else {
                text.unicodeScalars.append(scalar)
            }
        }
        return text
    }

    /// The key's segments, cut at every `/` byte as file systems and object stores cut them. Cut at
    /// `/` characters, `../\u{301}x` was one segment, not `..`: a `/` and the combining mark after it
    /// are one character (the key-template fuzz target found this; such a key left the destination).
    private static func segments(_ key: String) -> [Substring.UTF8View] {
        key.utf8.split(separator: slash, omittingEmptySubsequences: false)
    }
}
