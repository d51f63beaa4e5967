import ImagePipeTOML
import ImagePipeTestSupport
import Testing

/// The configuration file's TOML reader: what it accepts, and errors that point at the line.
@Suite(.offThePool) struct ConfigurationDocumentTests {
    func parse(_ text: String) throws(ConfigurationSyntaxError) -> ConfigurationTable {
        try ConfigurationDocument.parse(text, path: "x.toml")
    }

    func failure(_ text: String) -> String? {
        do {
            _ = try parse(text)
            return nil
        } catch {
            #expect(error.path == "x.toml")
            return error.description
        }
    }

    @Test func valuesOfEveryKindWithTheirLines() throws {
        let table = try parse(
            """
            # a comment
            name = "basic \\"quoted\\" \\u00e9\\t\\\\"   # trailing comment
            path = 'C:\\literal\\path'
            count = 1_000
            negative = -12
            ratio = 2.5
            small = 1e-3
            on = true
            "quoted key" = false
            list = [
              "a",   # comment inside
              'b',
            ]
            empty = []
            """)
        #expect(table.entries.map(\.key) == ["name", "path", "count", "negative", "ratio", "small", "on", "quoted key", "list", "empty"])
        #expect(table["name"] == ConfigurationValue(.string("basic \"quoted\" é\t\\"), line: 2))
        #expect(table["path"]?.content == .string("C:\\literal\\path"))
        #expect(table["count"]?.content == .integer(1000))
        #expect(table["negative"]?.content == .integer(-12))
        #expect(table["ratio"]?.content == .float(2.5))
        #expect(table["small"]?.content == .float(0.001))
        #expect(table["on"]?.content == .boolean(true))
        #expect(table["quoted key"]?.content == .boolean(false))
        #expect(
            table["list"]
                == ConfigurationValue(
                    .array([
                        ConfigurationValue(.string("a"), line: 11), ConfigurationValue(.string("b"), line: 12),
                    ]), line: 10))
        #expect(table["empty"]?.content == .array([]))
    }

    @Test func tablesFromHeadersAndDottedKeys() throws {
        let table = try parse(
            """
            top = 1
            [watch]
            jobs = 2
            [presets]
            a.b = "x"
            [presets.c]
            d = 3
            """)
        guard case .table(let watch) = table["watch"]?.content, case .table(let presets) = table["presets"]?.content,
            case .table(let a) = presets["a"]?.content, case .table(let c) = presets["c"]?.content
        else {
            Issue.record("tables missing: \(table)")
            return
        }
        #expect(table["watch"]?.line == 2)
        #expect(watch["jobs"] == ConfigurationValue(.integer(2), line: 3))
        #expect(a["b"]?.content == .string("x"))
        #expect(c["d"]?.content == .integer(3))
        #expect(table.entries.map(\.key) == ["top", "watch", "presets"])
    }

    @Test func windowsLineEndingsAndAByteOrderMarkAreRead() throws {
        let table = try parse("\u{FEFF}a = 1\r\nb = \"two\"\r\n")
        #expect(table["b"] == ConfigurationValue(.string("two"), line: 2))
    }

    @Test(arguments: [
        ("a = 1\na = 2", "x.toml:2: 'a' is already defined on line 1"),
        ("[t]\nx = 1\n[t]", "x.toml:3: the table [t] is already defined on line 1"),
        ("a = 1\n[a]", "x.toml:2: 'a' is a value (line 1), not a table"),
        ("a = \"open", "x.toml:1: the string is not closed with '\"'"),
        ("a = 'open", "x.toml:1: the string is not closed with \"'\""),
        ("a = \"bad \\q\"", "x.toml:1: unknown escape '\\q' in a string"),
        ("\n\na = yes", "x.toml:3: 'yes' is not a value: strings need quotes"),
        ("a = 1_", "x.toml:1: '1_' is not a value"),
        ("a =", "x.toml:1: a value is missing after '='"),
        ("a 1", "x.toml:1: expected '=' after the key 'a'"),
        ("a = [1, 2", "x.toml:1: the array is not closed with ']'"),
        ("a = [1 2]", "x.toml:1: expected ',' or ']' in the array"),
        ("a = 1 b = 2", "x.toml:1: unexpected 'b' after the value; one key per line"),
        ("a = \"\"\"\nx\"\"\"", "x.toml:1: multi-line strings (\"\"\") are not supported"),
        ("a = { b = 1 }", "x.toml:1: inline tables ({...}) are not supported; use a [table] header"),
        ("[[a]]", "x.toml:1: arrays of tables ([[...]]) are not supported"),
        ("d = 2024-05-01", "x.toml:1: dates and times are not supported ('2024-05-01')"),
        ("= 1", "x.toml:1: unexpected '=' where a key should be"),
        ("[t\n", "x.toml:1: expected ']' to close the table header"),
    ])
    func errorsNameTheFileAndLine(_ text: String, _ expected: String) {
        let reason = failure(text)
        #expect(reason?.hasPrefix(expected) == true, "\(reason ?? "accepted")")
    }
}

/// The reader's bounds under hostile files (issue 26, and fixtures/fuzz/crashes/toml/): what it holds
/// and how deep it recurses are limited, and its time grows with the file, not the file squared.
@Suite(.offThePool) struct ConfigurationDocumentLimitTests {
    func failure(_ text: String) -> String? {
        do {
            _ = try ConfigurationDocument.parse(text, path: "x.toml")
            return nil
        } catch {
            #expect(error.path == "x.toml")
            return error.description
        }
    }

    @Test func aFileLongerThanTheLimitIsRefusedBeforeItIsParsed() {
        let text = "# " + String(repeating: "x", count: ConfigurationDocument.maxBytes)
        #expect(failure(text) == "x.toml: the file is longer than the 1048576 bytes a configuration file may have")
        #expect(failure(String(text.prefix(ConfigurationDocument.maxBytes))) == nil)
    }

    @Test func arraysNestOnlySoDeep() {
        // 60,000 brackets ran the stack out (an AddressSanitizer stack-overflow report in the fuzz build).
        let depth = ConfigurationDocument.maxDepth
        #expect(failure("a = " + String(repeating: "[", count: depth) + String(repeating: "]", count: depth)) == nil)
        #expect(failure("a = " + String(repeating: "[", count: depth + 1)) == "x.toml:1: arrays nested more than 32 deep")
        #expect(failure("a = " + String(repeating: "[", count: 60_000)) == "x.toml:1: arrays nested more than 32 deep")
    }

    @Test func tablesNestOnlySoDeepWhetherByHeadersOrDottedKeys() {
        let depth = ConfigurationDocument.maxDepth
        let deepest = Array(repeating: "t", count: depth).joined(separator: ".")
        #expect(failure("\(deepest) = 1") == nil)
        #expect(failure("[\(deepest)]\nk = 1") == nil)
        #expect(failure("\(deepest).t = 1") == "x.toml:1: tables nested more than 32 deep")
        #expect(failure("[\(deepest).t]") == "x.toml:1: tables nested more than 32 deep")
        #expect(failure("[\(deepest)]\nk.k = 1") == "x.toml:2: tables nested more than 32 deep")
        #expect(failure("a" + String(repeating: ".a", count: 30_000) + " = 1") == "x.toml:1: tables nested more than 32 deep")
    }

    @Test func manyKeysAndTablesTakeTimeInProportion() throws {
        // Every key was compared with every key before it: 60,000 keys took over two minutes.
        let keys = (0..<80_000).map { "k\($0) = 1\n" }.joined()
        let tables = (0..<60_000).map { "[t\($0)]\n" }.joined()
        for text in [keys, tables] {
            #expect(text.utf8.count <= ConfigurationDocument.maxBytes)
            var table: ConfigurationTable?
            let elapsed = ContinuousClock().measure { table = try? ConfigurationDocument.parse(text, path: "x.toml") }
            #expect(table?.entries.count ?? 0 >= 60_000)
            #expect(elapsed < .seconds(30), "\(elapsed)")
        }
    }
}
