// The TOML reader against Python's tomllib, an independent reader, on the seed corpus, the example configuration and generated files.
import Foundation
import ImagePipeTOML
import ImagePipeTestSupport
import Testing

/// Differential tests: for every document, imagepipe's reader and `tomllib` must agree.
///
/// - both accept: the same keys, tables and values (numbers compared as numbers);
/// - tomllib refuses: imagepipe refuses too;
/// - only tomllib accepts: allowed only where imagepipe's reader says the construct is not supported
///   (multi-line strings, inline tables, arrays of tables, dates: the subset documented in
///   docs/operations.md) or the integer is past 64 bits, which TOML itself forbids.
@Suite(.offThePool) struct ConfigurationDocumentOracleTests {
    /// Reads each document with tomllib; one Python process for all of them.
    static let oracle = """
        import json, math, sys, tomllib

        def tag(value):
            if isinstance(value, bool): return {"b": value}
            if isinstance(value, int): return {"i": str(value)}
            if isinstance(value, float): return {"f": repr(value)}
            if isinstance(value, str): return {"s": value}
            if isinstance(value, list): return {"a": [tag(item) for item in value]}
            if isinstance(value, dict): return {"t": {key: tag(item) for key, item in value.items()}}
            return {"other": type(value).__name__}

        answers = []
        for text in json.load(sys.stdin):
            try:
                answers.append({"value": tag(tomllib.loads(text))})
            except (tomllib.TOMLDecodeError, RecursionError) as error:  # the deep-nesting seeds run its stack out
                answers.append({"error": str(error)})
        json.dump(answers, sys.stdout)
        """

    /// What tomllib said of one document.
    enum Answer {
        case value(Tagged)
        case error(String)
    }

    /// A value as both sides can write it, so they compare.
    indirect enum Tagged: Equatable, CustomStringConvertible {
        case boolean(Bool)
        case integer(String)
        case float(Double)
        case string(String)
        case array([Tagged])
        case table([String: Tagged])

        init(_ json: Any) throws {
            guard let object = json as? [String: Any], let (kind, value) = object.first else { throw Unreadable(json) }
            switch (kind, value) {
            case ("b", let value as Bool): self = .boolean(value)
            case ("i", let value as String): self = .integer(value)
            case ("f", let value as String): self = .float(Double(value) ?? .nan)
            case ("s", let value as String): self = .string(value)
            case ("a", let value as [Any]): self = .array(try value.map(Tagged.init))
            case ("t", let value as [String: Any]): self = .table(try value.mapValues(Tagged.init))
            default: throw Unreadable(json)
            }
        }

        init(_ value: ConfigurationValue) {
            switch value.content {
            case .boolean(let value): self = .boolean(value)
            case .integer(let value): self = .integer(String(value))
            case .float(let value): self = .float(value)
            case .string(let value): self = .string(value)
            case .array(let values): self = .array(values.map(Tagged.init))
            case .table(let table): self = Tagged(table)
            }
        }

        init(_ table: ConfigurationTable) {
            self = .table(Dictionary(table.entries.map { ($0.key, Tagged($0.value)) }, uniquingKeysWith: { first, _ in first }))
        }

        static func == (a: Tagged, b: Tagged) -> Bool {
            switch (a, b) {
            case (.boolean(let x), .boolean(let y)): x == y
            case (.integer(let x), .integer(let y)): x == y
            // Equal as numbers, NaN equal to NaN, and the sign of zero kept.
            case (.float(let x), .float(let y)): (x.isNaN && y.isNaN) || (x == y && x.sign == y.sign)
            case (.string(let x), .string(let y)): x == y
            case (.array(let x), .array(let y)): x == y
            case (.table(let x), .table(let y)): x == y
            default: false
            }
        }

        var description: String {
            switch self {
            case .boolean(let value): "\(value)"
            case .integer(let value): value
            case .float(let value): "\(value)f"
            case .string(let value): "\"\(value)\""
            case .array(let values): "[\(values.map(\.description).joined(separator: ", "))]"
            case .table(let table): "{\(table.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", "))}"
            }
        }
    }

    /// A value the oracle did not expect, as text: an error is Sendable, and `Any` is not.
    struct Unreadable: Error { let json: String; init(_ json: Any) { self.json = "\(json)" } }

    /// The documents: the fuzz seeds, the example configuration, and `count` generated ones with
    /// their mutants.
    static func documents(count: Int, generator: inout SeededRandom) throws -> [String] {
        let root = (Fixtures.root as NSString).deletingLastPathComponent
        var documents: [String] = []
        // Not the crash inputs (60 kB of nesting): tomllib takes 18 s on one; the limit tests cover them.
        for folder in ["fixtures/fuzz/toml"] {
            let path = root + "/" + folder
            for name in (try? FileManager.default.contentsOfDirectory(atPath: path).sorted()) ?? [] {
                if let text = String(data: try Data(contentsOf: URL(fileURLWithPath: path + "/" + name)), encoding: .utf8) {
                    documents.append(text)
                }
            }
        }
        documents.append(try String(contentsOfFile: root + "/deploy/imagepipe.example.toml", encoding: .utf8))
        for _ in 0..<count {
            let document = TOMLGenerator.document(using: &generator)
            documents.append(document)
            documents.append(TOMLGenerator.mutant(of: document, using: &generator))
        }
        return documents
    }

    @Test func theReaderAgreesWithTomllib() throws {
        var generator = SeededRandom.fromEnvironment()
        let seed = generator.seed
        let documents = try Self.documents(count: 400, generator: &generator)
        let output = try PythonOracle.run(Self.oracle, input: try JSONSerialization.data(withJSONObject: documents))
        let answers = try #require(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [[String: Any]])
        try #require(answers.count == documents.count)
        var counts = (agreed: 0, bothRefused: 0, unsupported: 0)
        for (document, answer) in zip(documents, answers) {
            let ours = Result { () throws(ConfigurationSyntaxError) in try ConfigurationDocument.parse(document, path: "x.toml") }
            let context = "IMAGEPIPE_TEST_SEED=\(seed), document:\n\(document)"
            switch (ours, answer["value"], answer["error"] as? String) {
            case (.success(let table), let value?, _):
                let theirs = try Tagged(value)
                #expect(Tagged(table) == theirs, "imagepipe: \(Tagged(table))\ntomllib: \(theirs)\n\(context)")
                counts.agreed += 1
            case (.success(let table), nil, let reason):
                Issue.record("imagepipe accepted what tomllib refuses (\(reason ?? "?")): \(Tagged(table))\n\(context)")
            case (.failure, nil, _):
                counts.bothRefused += 1
            case (.failure(let error), _?, _):
                let allowed = error.reason.contains("not supported") || error.reason.contains("64-bit")
                #expect(allowed, "imagepipe refused what tomllib reads: \(error)\n\(context)")
                counts.unsupported += 1
            }
        }
        // The generator must produce both kinds, or the comparison proves little.
        #expect(counts.agreed >= 200 && counts.bothRefused >= 50, "\(counts)")
    }
}

/// Random TOML documents within imagepipe's subset, and mutants of them that may be anything.
enum TOMLGenerator {
    static func document(using generator: inout SeededRandom) -> String {
        var lines: [String] = []
        var usedTables: Set<String> = []
        var keysInTable: Set<String> = []
        for _ in 0..<Int.random(in: 1...4, using: &generator) {
            let keys = Int.random(in: 0...5, using: &generator)
            for _ in 0..<keys {
                let key = self.key(using: &generator)
                guard keysInTable.insert(key).inserted else { continue }
                let comment = Bool.random(using: &generator) ? "  # note" : ""
                let written = quotedIfNeeded(key, using: &generator)
                let value = self.value(depth: 0, using: &generator)
                lines.append("\(written) = \(value)\(comment)")
            }
            if Int.random(in: 0..<4, using: &generator) == 0 { lines.append(Bool.random(using: &generator) ? "" : "# comment") }
            // A header for a new table, sometimes a dotted one.
            let first = self.key(using: &generator)
            var name = quotedIfNeeded(first, using: &generator)
            if Bool.random(using: &generator) {
                let part = self.key(using: &generator)
                name += "." + quotedIfNeeded(part, using: &generator)
            }
            guard usedTables.insert(name).inserted else { break }
            lines.append("[\(name)]")
            keysInTable = []
        }
        return lines.joined(separator: Bool.random(using: &generator) ? "\n" : "\r\n") + "\n"
    }

    static func key(using generator: inout SeededRandom) -> String {
        let pool = ["jobs", "dest", "quality", "a", "b-c", "x_1", "preset", "key with space", "é", "dotted.key", "watch", "batch", "1"]
        return pool[Int.random(in: 0..<pool.count, using: &generator)]
    }

    static func quotedIfNeeded(_ key: String, using generator: inout SeededRandom) -> String {
        let bare = key.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "-" || $0 == "_" }
        return bare ? key : (Bool.random(using: &generator) ? "\"\(key)\"" : "'\(key)'")
    }

    static func value(depth: Int, using generator: inout SeededRandom) -> String {
        switch Int.random(in: 0..<(depth < 2 ? 9 : 8), using: &generator) {
        case 0: return Bool.random(using: &generator) ? "true" : "false"
        case 1: return String(Int.random(in: -100_000...100_000, using: &generator))
        case 2:
            return ["1_000", "+7", "-0", "0", "9223372036854775807", "-9223372036854775808", "1__0", "01"][Int.random(in: 0..<8, using: &generator)]
        case 3: return ["2.5", "-0.0", "1e-3", "6.02E+23", "inf", "-inf", "nan", "1.", ".5", "3.1_4"][Int.random(in: 0..<10, using: &generator)]
        case 4:
            return "\""
                + ["plain", "tab\\there", "quote \\\"q\\\"", "\\u00e9\\U0001F600", "back\\\\slash", "{hash}/{stem}"][
                    Int.random(in: 0..<6, using: &generator)] + "\""
        case 5: return "'" + ["C:\\path", "no \\escapes", "{dir}/{stem}-{variant}.{ext}"][Int.random(in: 0..<3, using: &generator)] + "'"
        case 6: return "\"\""
        case 7: return ["\"large=2048,jpeg\"", "'thumb=320x320,webp,cover'"][Int.random(in: 0..<2, using: &generator)]
        default:
            let items = (0..<Int.random(in: 0...3, using: &generator)).map { _ in value(depth: depth + 1, using: &generator) }
            let trailing = !items.isEmpty && Bool.random(using: &generator) ? "," : ""
            return Bool.random(using: &generator)
                ? "[" + items.joined(separator: ", ") + trailing + "]"
                : "[\n  " + items.joined(separator: ",\n  ") + trailing + "\n]"
        }
    }

    /// `document` with one to three characters inserted, deleted or replaced.
    static func mutant(of document: String, using generator: inout SeededRandom) -> String {
        var scalars = Array(document.unicodeScalars)
        let pieces: [Unicode.Scalar] = ["\"", "'", "=", "[", "]", "\n", ".", ",", "#", " ", "\\", "x", "1", "-", "_", "{", ":", "\t", "\r"]
        for _ in 0..<Int.random(in: 1...3, using: &generator) where !scalars.isEmpty {
            let at = Int.random(in: 0..<scalars.count, using: &generator)
            let piece = pieces[Int.random(in: 0..<pieces.count, using: &generator)]
            switch Int.random(in: 0..<3, using: &generator) {
            case 0: scalars.insert(piece, at: at)
            case 1: scalars.remove(at: at)
            default: scalars[at] = piece
            }
        }
        var text = ""
        text.unicodeScalars.append(contentsOf: scalars)
        return text
    }
}
