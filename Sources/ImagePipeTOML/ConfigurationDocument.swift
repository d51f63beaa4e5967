// A parsed configuration file: TOML tables and values, each value with the line it was written on.
// A module of its own: the command line reads it, and the fuzz harness feeds it hostile bytes.

/// A value of a configuration file, and where it was written, so an error can point at its line.
public struct ConfigurationValue: Sendable, Equatable {
    /// What a TOML value can be in imagepipe's configuration.
    public indirect enum Content: Sendable, Equatable {
        case string(String)
        case integer(Int)
        case float(Double)
        case boolean(Bool)
        case array([ConfigurationValue])
        case table(ConfigurationTable)
    }

    /// The value.
    public var content: Content
    /// The line (from 1) its key was written on; for a table, the line of its header or first key.
    public var line: Int

    public init(_ content: Content, line: Int) {
        self.content = content
        self.line = line
    }

    /// The name of the value's type, for messages such as "expects a string, not an array".
    public var typeName: String {
        switch content {
        case .string: "a string"
        case .integer: "an integer"
        case .float: "a number"
        case .boolean: "a boolean"
        case .array: "an array"
        case .table: "a table"
        }
    }
}

/// A TOML table: keys in the order they were written.
public struct ConfigurationTable: Sendable, Equatable {
    /// One key and its value.
    public struct Entry: Sendable, Equatable {
        public var key: String
        public var value: ConfigurationValue
    }

    /// The entries in file order (a table defined under a header comes where its first key or header was).
    public var entries: [Entry]

    public init(entries: [Entry] = []) { self.entries = entries }

    /// The value of `key`, or nil.
    public subscript(key: String) -> ConfigurationValue? {
        entries.first { $0.key == key }?.value
    }
}

/// Parses configuration files.
///
/// The format is TOML, the subset a settings file needs: comments, bare and quoted keys, dotted
/// keys, `[table]` headers, basic and literal strings, integers, floats, booleans and arrays (over
/// several lines, with comments and a trailing comma). Multi-line strings, inline tables, arrays
/// of tables and dates are refused with the line they are on, rather than misread.
public enum ConfigurationDocument {
    /// The longest file read, 1 MiB: a settings file is a few kilobytes, and a stray binary or log
    /// named by mistake is refused at once instead of being held whole and parsed.
    public static let maxBytes = 1 << 20

    /// The deepest nesting of tables (headers and dotted keys together) and of arrays: the parser and
    /// the values it makes recurse once per level, so a file of `[[[[…` or `a.a.a.…` would otherwise
    /// run the stack out long before reaching ``maxBytes``.
    public static let maxDepth = 32

    /// The top-level table of `text`; errors name `path` and the line.
    public static func parse(_ text: String, path: String) throws(ConfigurationSyntaxError) -> ConfigurationTable {
        guard text.utf8.count <= maxBytes else { throw tooLarge(path) }
        var parser = ConfigurationParser(text: text, path: path)
        return try parser.document()
    }

    /// The error for a file longer than ``maxBytes``, for readers that stop reading there.
    public static func tooLarge(_ path: String) -> ConfigurationSyntaxError {
        ConfigurationSyntaxError(path: path, line: nil, reason: "the file is longer than the \(maxBytes) bytes a configuration file may have")
    }
}
