// The TOML reader behind ConfigurationDocument: one pass over the characters, tracking the line for errors.

/// Reads one configuration document. Tables are assembled in ``TableBuilder``s, which keep track of
/// where each key was first defined so that a second definition can name both lines.
struct ConfigurationParser {
    private let scalars: [Unicode.Scalar]
    private let path: String
    private var index = 0
    private var line = 1
    /// The tables the last header opened, and the arrays open around the value being read.
    private var headerDepth = 0
    private var arrayDepth = 0

    init(text: String, path: String) {
        scalars = Array(text.unicodeScalars)
        self.path = path
    }

    /// The whole document.
    mutating func document() throws(ConfigurationSyntaxError) -> ConfigurationTable {
        let root = TableBuilder(line: 1, explicit: true)
        var current = root
        if peek == "\u{FEFF}" { index += 1 }
        while true {
            skipBlank()
            guard let next = peek else { break }
            switch next {
            case "\n", "\r":
                try newline()
            case "#":
                skipComment()
            case "[":
                current = try tableHeader(root)
            default:
                let keyLine = line
                let key = try dottedKey(depth: headerDepth)
                skipBlank()
                guard peek == "=" else { throw failure("expected '=' after the key '\(key.joined(separator: "."))'") }
                index += 1
                skipBlank()
                let value = try value(line: keyLine)
                try current.insert(path: key, value: value, parser: self)
                try endOfLine()
            }
        }
        return root.table
    }

    // MARK: Tables and keys

    private mutating func tableHeader(_ root: TableBuilder) throws(ConfigurationSyntaxError) -> TableBuilder {
        index += 1
        if peek == "[" { throw failure("arrays of tables ([[...]]) are not supported") }
        skipBlank()
        let headerLine = line
        let key = try dottedKey(depth: 0)
        headerDepth = key.count
        skipBlank()
        guard peek == "]" else { throw failure("expected ']' to close the table header") }
        index += 1
        try endOfLine()
        return try root.defineTable(path: key, line: headerLine, parser: self)
    }

    /// A key of one or more dotted parts, under `depth` tables already open.
    private mutating func dottedKey(depth: Int) throws(ConfigurationSyntaxError) -> [String] {
        var parts = [try simpleKey()]
        while true {
            skipBlank()
            guard peek == "." else { return parts }
            guard depth + parts.count < ConfigurationDocument.maxDepth else {
                throw failure("tables nested more than \(ConfigurationDocument.maxDepth) deep")
            }
            index += 1
            skipBlank()
            parts.append(try simpleKey())
        }
    }

    private mutating func simpleKey() throws(ConfigurationSyntaxError) -> String {
        switch peek {
        case "\"": return try basicString()
        case "'": return try literalString()
        default:
            var key = ""
            while let scalar = peek, scalar.isASCIIAlphanumeric || scalar == "-" || scalar == "_" {
                key.unicodeScalars.append(scalar)
                index += 1
            }
            guard !key.isEmpty else {
                throw failure(peek.map { "unexpected '\(Character($0))' where a key should be" } ?? "a key is missing")
            }
            return key
        }
    }

    // MARK: Values

    private mutating func value(line keyLine: Int) throws(ConfigurationSyntaxError) -> ConfigurationValue {
        switch peek {
        case "\"":
            if starts(with: "\"\"\"") { throw failure("multi-line strings (\"\"\") are not supported") }
            return ConfigurationValue(.string(try basicString()), line: keyLine)
        case "'":
            if starts(with: "'''") { throw failure("multi-line strings (''') are not supported") }
            return ConfigurationValue(.string(try literalString()), line: keyLine)
        case "[":
            return ConfigurationValue(.array(try array()), line: keyLine)
        case "{":
            throw failure("inline tables ({...}) are not supported; use a [table] header")
        case nil, "\n", "\r", "#":
            throw failure("a value is missing after '='")
        default:
            return ConfigurationValue(try bareValue(), line: keyLine)
        }
    }

    private mutating func array() throws(ConfigurationSyntaxError) -> [ConfigurationValue] {
        guard arrayDepth < ConfigurationDocument.maxDepth else {
            throw failure("arrays nested more than \(ConfigurationDocument.maxDepth) deep")
        }
        arrayDepth += 1
        defer { arrayDepth -= 1 }
        index += 1
        var elements: [ConfigurationValue] = []
        while true {
            try skipBlankLinesAndComments()
            if peek == "]" { index += 1; return elements }
            guard peek != nil else { throw failure("the array is not closed with ']'") }
            elements.append(try value(line: line))
            try skipBlankLinesAndComments()
            switch peek {
            case ",": index += 1
            case "]": index += 1; return elements
            case nil: throw failure("the array is not closed with ']'")
            default: throw failure("expected ',' or ']' in the array")
            }
        }
    }

    /// Booleans and numbers: everything up to the next space, comma, bracket, comment or line end.
    private mutating func bareValue() throws(ConfigurationSyntaxError) -> ConfigurationValue.Content {
        var word = ""
        while let scalar = peek, !" \t\r\n,]#".unicodeScalars.contains(scalar) {
            word.unicodeScalars.append(scalar)
            index += 1
        }
        switch word {
        case "true": return .boolean(true)
        case "false": return .boolean(false)
        case "inf", "+inf": return .float(.infinity)
        case "-inf": return .float(-.infinity)
        case "nan", "+nan", "-nan": return .float(.nan)
        default: break
        }
        switch Self.number(word) {
        case .integer(let integer): return .integer(integer)
        case .float(let float): return .float(float)
        case .tooLarge: throw failure("'\(word)' is past the 64-bit integers TOML allows")
        case .invalid: break
        }
        if word.contains(":") || word.filter({ $0 == "-" }).count >= 2 {
            throw failure("dates and times are not supported ('\(word)'); quote it to give a string")
        }
        throw failure("'\(word)' is not a value: strings need quotes, numbers digits, booleans true or false")
    }

    private mutating func basicString() throws(ConfigurationSyntaxError) -> String {
        index += 1
        var text = ""
        while true {
            guard let scalar = peek, scalar != "\n", scalar != "\r" else { throw failure("the string is not closed with '\"'") }
            index += 1
            switch scalar {
            case "\"":
                return text
            case "\\":
                text.unicodeScalars.append(try escape())
            default:
                guard scalar == "\t" || scalar.value >= 0x20 && scalar.value != 0x7F else {
                    throw failure("control character U+\(String(scalar.value, radix: 16, uppercase: true)) in a string; escape it")
                }
                text.unicodeScalars.append(scalar)
            }
        }
    }

    private mutating func escape() throws(ConfigurationSyntaxError) -> Unicode.Scalar {
        guard let scalar = peek else { throw failure("the string is not closed with '\"'") }
        index += 1
        switch scalar {
        case "\"": return "\""
        case "\\": return "\\"
        case "b": return "\u{08}"
        case "t": return "\t"
        case "n": return "\n"
        case "f": return "\u{0C}"
        case "r": return "\r"
        case "u", "U":
            let count = scalar == "u" ? 4 : 8
            guard index + count <= scalars.count else { throw failure("\\\(scalar) needs \(count) hexadecimal digits") }
            var hex = ""
            hex.unicodeScalars.append(contentsOf: scalars[index..<index + count])
            guard let value = UInt32(hex, radix: 16), let result = Unicode.Scalar(value) else {
                throw failure("\\\(scalar)\(hex) is not a Unicode scalar value")
            }
            index += count
            return result
        default:
            throw failure("unknown escape '\\\(Character(scalar))' in a string (a Windows path can go in 'single quotes')")
        }
    }

    private mutating func literalString() throws(ConfigurationSyntaxError) -> String {
        index += 1
        var text = ""
        while true {
            guard let scalar = peek, scalar != "\n", scalar != "\r" else { throw failure("the string is not closed with \"'\"") }
            index += 1
            if scalar == "'" { return text }
            text.unicodeScalars.append(scalar)
        }
    }

    // MARK: Blanks, comments, lines

    private var peek: Unicode.Scalar? { index < scalars.count ? scalars[index] : nil }

    private func starts(with prefix: String) -> Bool {
        var position = index
        for scalar in prefix.unicodeScalars {
            guard position < scalars.count, scalars[position] == scalar else { return false }
            position += 1
        }
        return true
    }

    private mutating func skipBlank() {
        while peek == " " || peek == "\t" { index += 1 }
    }

    private mutating func skipComment() {
        while let scalar = peek, scalar != "\n", scalar != "\r" { index += 1 }
    }

    private mutating func newline() throws(ConfigurationSyntaxError) {
        if peek == "\r" {
            index += 1
            guard peek == "\n" else { throw failure("a carriage return must be followed by a line feed") }
        }
        index += 1
        line += 1
    }

    /// Inside an array: spaces, line breaks and comments.
    private mutating func skipBlankLinesAndComments() throws(ConfigurationSyntaxError) {
        while true {
            skipBlank()
            switch peek {
            case "#": skipComment()
            case "\n", "\r": try newline()
            default: return
            }
        }
    }

    /// After a key/value pair or a header: blanks, an optional comment, then a line break or the end.
    private mutating func endOfLine() throws(ConfigurationSyntaxError) {
        skipBlank()
        if peek == "#" { skipComment() }
        guard let next = peek else { return }
        guard next == "\n" || next == "\r" else { throw failure("unexpected '\(Character(next))' after the value; one key per line") }
        try newline()
    }

    func failure(_ reason: String, line: Int? = nil) -> ConfigurationSyntaxError {
        ConfigurationSyntaxError(path: path, line: line ?? self.line, reason: reason)
    }
}

/// A table being read: its keys, and whether a header defined it (a header may not come twice).
final class TableBuilder {
    fileprivate enum Item {
        case value(ConfigurationValue)
        case table(TableBuilder)
    }

    private var items: [(key: String, item: Item)] = []
    /// Where each key is in `items`: looked up once per key and header, so a table of n keys costs n
    /// lookups, not n² comparisons.
    private var positions: [String: Int] = [:]
    private let line: Int
    private var explicit: Bool

    init(line: Int, explicit: Bool) {
        self.line = line
        self.explicit = explicit
    }

    var table: ConfigurationTable {
        ConfigurationTable(
            entries: items.map { key, item in
                switch item {
                case .value(let value): ConfigurationTable.Entry(key: key, value: value)
                case .table(let table): ConfigurationTable.Entry(key: key, value: ConfigurationValue(.table(table.table), line: table.line))
                }
            })
    }

    /// Sets `path` (a dotted key) to `value`, creating the tables on the way.
    func insert(path: [String], value: ConfigurationValue, parser: ConfigurationParser) throws(ConfigurationSyntaxError) {
        let parent = try subtable(path.dropLast(), line: value.line, parser: parser)
        let key = path[path.count - 1]
        if let existing = parent.item(key) {
            throw parser.failure("'\(path.joined(separator: "."))' is already defined on line \(existing.line)", line: value.line)
        }
        parent.append(key, .value(value))
    }

    private func item(_ key: String) -> Item? {
        positions[key].map { items[$0].item }
    }

    private func append(_ key: String, _ item: Item) {
        positions[key] = items.count
        items.append((key, item))
    }

    /// The table a `[header]` names, created (or completed, when dotted keys made it) here.
    func defineTable(path: [String], line: Int, parser: ConfigurationParser) throws(ConfigurationSyntaxError) -> TableBuilder {
        let table = try subtable(path[...], line: line, parser: parser)
        guard !table.explicit else {
            throw parser.failure("the table [\(path.joined(separator: "."))] is already defined on line \(table.line)", line: line)
        }
        table.explicit = true
        return table
    }

    private func subtable(_ path: ArraySlice<String>, line: Int, parser: ConfigurationParser) throws(ConfigurationSyntaxError) -> TableBuilder {
        var table = self
        for (offset, key) in path.enumerated() {
            if let existing = table.item(key) {
                guard case .table(let next) = existing else {
                    let name = path.prefix(offset + 1).joined(separator: ".")
                    throw parser.failure("'\(name)' is a value (line \(existing.line)), not a table", line: line)
                }
                table = next
            } else {
                let next = TableBuilder(line: line, explicit: false)
                table.append(key, .table(next))
                table = next
            }
        }
        return table
    }
}

extension TableBuilder.Item {
    fileprivate var line: Int {
        switch self {
        case .value(let value): value.line
        case .table(let table): table.line
        }
    }
}

extension Unicode.Scalar {
    /// A letter or digit of ASCII: what a bare key is made of, with `-` and `_`.
    fileprivate var isASCIIAlphanumeric: Bool {
        ("a"..."z").contains(self) || ("A"..."Z").contains(self) || ("0"..."9").contains(self)
    }
}
