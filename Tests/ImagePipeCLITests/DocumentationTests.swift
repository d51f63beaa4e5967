// The README and docs/ as a reader meets them: every relative link reaches a file and a heading, the
// README stays short, every `imagepipe` command shown is one the built binary accepts, and the blocks
// marked to run do run.
import Foundation
import ImagePipeTestSupport
import Testing

@Suite(.offThePool) struct DocumentationTests {
    @Test func everyRelativeLinkReachesAFileAndItsHeading() throws {
        var problems: [String] = []
        var links = 0
        for page in try DocumentationPage.all() {
            let found = page.links()
            links += found.count
            problems += found.compactMap { page.problem(with: $0) }
        }
        #expect(links >= 100, "the link scanner found only \(links) links")
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    }

    @Test func theReadmeIsAtMost300Lines() throws {
        let readme = try DocumentationPage.load("README.md")
        #expect(readme.lines.count <= 300, "README.md has \(readme.lines.count) lines: move detail into docs/")
    }

    /// The Layout table links each folder of `Sources/` once (a module, or each of its subfolders), so a
    /// folder added or renamed cannot be left out of the map.
    @Test func theLayoutLinksEachSourceFolderOnce() throws {
        let readme = try DocumentationPage.load("README.md")
        // Line numbers count from 1: the heading is line `heading`, the section the lines after it.
        let heading = try #require(readme.lines.firstIndex(of: "## Layout")) + 1
        let section = readme.lines[heading...].prefix { !$0.hasPrefix("## ") }
        let targets = readme.links().filter { $0.line > heading && $0.line <= heading + section.count }.map(\.target)
        let repeated = Dictionary(grouping: targets, by: { $0 }).filter { $0.value.count > 1 }.keys
        #expect(repeated.isEmpty, "linked more than once: \(repeated.sorted())")
        let listed = Set(targets)
        let root = Fixtures.repository + "/Sources"
        for module in try FileManager.default.contentsOfDirectory(atPath: root).sorted() {
            let path = "Sources/" + module
            if listed.contains(path) { continue }
            let subfolders = try FileManager.default.contentsOfDirectory(atPath: root + "/" + module).filter {
                var isDirectory: ObjCBool = false
                return FileManager.default.fileExists(atPath: "\(root)/\(module)/\($0)", isDirectory: &isDirectory)
                    && isDirectory.boolValue
            }
            let missing = subfolders.map { path + "/" + $0 }.filter { !listed.contains($0) }
            #expect(!subfolders.isEmpty && missing.isEmpty, "the Layout does not list \(missing.isEmpty ? path : missing.joined(separator: ", "))")
        }
    }

    /// Each `imagepipe …` command in a shell block is parsed word by word against argument-parser's own
    /// description of the built binary (`--experimental-dump-help`): its subcommands must exist, and every
    /// option must be one the subcommand declares and shows. Synopses, output samples and inline code are
    /// checked more loosely: the subcommand and every `--option` they name.
    @Test func everyImagepipeCommandShownParses() throws {
        let tool = try DescribedCommand.builtTool()
        var problems: [String] = []
        var strict = 0
        var loose = 0
        for page in try DocumentationPage.all() {
            for shown in page.commands() {
                if shown.strict { strict += 1 } else { loose += 1 }
                problems += tool.problems(with: shown).map { "\(page.path):\(shown.line): \($0) in `\(shown.text)`" }
            }
        }
        #expect(strict >= 15 && loose >= 40, "found only \(strict) commands in shell blocks and \(loose) elsewhere")
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    }

    /// Each `make TARGET` in a shell block names a target of the Makefile.
    @Test func everyMakeTargetShownExists() throws {
        let makefile = try String(contentsOfFile: Fixtures.repository + "/Makefile", encoding: .utf8)
        let targets = Set(
            makefile.split(separator: "\n").compactMap { line -> Substring? in
                guard let colon = line.firstIndex(of: ":"), !line.hasPrefix("\t"), !line.hasPrefix("#") else { return nil }
                let name = line[..<colon]
                return name.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" } ? name : nil
            }.map(String.init))
        var problems: [String] = []
        for page in try DocumentationPage.all() {
            for block in page.blocks() where block.isShell {
                for line in block.logicalLines {
                    for words in ShellWords.commands(in: line.text) where words.first == "make" {
                        for target in words.dropFirst() where !target.contains("=") && !target.hasPrefix("-") && !targets.contains(target) {
                            problems.append("\(page.path):\(line.number): no Makefile target '\(target)'")
                        }
                    }
                }
            }
        }
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    }

    /// The shell blocks marked `<!-- docs-test: runs in a scratch folder, in order -->` run, a page's
    /// blocks one after another in one scratch folder where `fixtures/` and `deploy/` are the
    /// repository's and `imagepipe` is the built binary. Each must exit 0. A marker that goes on
    /// `, with S3`, `, with PostgreSQL` or `, with an app` gives the block a server of that kind on
    /// loopback, through the environment a reader would set (see ``LoopbackServices``); a block
    /// marked `<!-- docs-test: the block above prints -->` after one is what it prints, each line
    /// to be found in its output, `…` standing for any text.
    @Test(arguments: try! DocumentationPage.all().filter { !$0.runnableBlocks().isEmpty })
    func theBlocksMarkedToRunDo(page: DocumentationPage) throws {
        let scratch = TemporaryDirectory(prefix: "imagepipe-docs")
        let manager = FileManager.default
        try manager.createSymbolicLink(atPath: scratch.url("fixtures"), withDestinationPath: Fixtures.root)
        try manager.createSymbolicLink(atPath: scratch.url("deploy"), withDestinationPath: Fixtures.repository + "/deploy")
        let bin = TemporaryDirectory(prefix: "imagepipe-docs-bin")
        try manager.createSymbolicLink(atPath: bin.url("imagepipe"), withDestinationPath: CommandRunner.binary)
        let path = bin.path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        let services = LoopbackServices(scratch: scratch)
        var last: (block: DocumentationPage.Block, output: CommandRunner.Output)?
        for block in page.blocks() {
            if block.marker == DocumentationPage.printsMarker {
                let ran = try #require(last, "\(page.path):\(block.line): no block ran before this output")
                for problem in DocumentationPage.missing(block.lines, from: ran.output) {
                    Issue.record("\(page.path):\(block.line): \(problem)\n\(ran.output.stdout)\n\(ran.output.stderr)")
                }
                continue
            }
            guard block.isShell, let marker = block.marker, marker.hasPrefix(DocumentationPage.runMarkerStem) else { continue }
            let environment = try services.environment(for: marker).merging(["PATH": path]) { $1 }
            let script = block.lines.joined(separator: "\n")
            let output = try CommandRunner.run(
                executable: "/bin/bash", ["-e", "-o", "pipefail", "-c", script], in: scratch.path, environment: environment)
            #expect(output.status == 0, "\(page.path):\(block.line): exit status \(output.status)\n\(script)\n\(output.stderr)")
            last = (block, output)
        }
        for problem in try services.appProblems() { Issue.record("\(page.path): \(problem)") }
    }

    /// The checks above find what they are for: a page with a missing file, a missing heading, an unknown
    /// subcommand and an unknown, a hidden and a misspelt option is reported on each.
    @Test func theChecksCatchBrokenLinksAndUnknownOptions() throws {
        let page = DocumentationPage(
            path: "docs/broken.md",
            text: """
                # Broken

                [gone](no-such-page.md), [no heading](usage.md#no-such-heading), [fine](usage.md#the-batch-command),
                [up](../README.md#layout), [here](#broken).

                ```sh
                imagepipe batch photos --dest out --no-such-option
                imagepipe bach photos --dest out
                imagepipe batch photos --dest out --preset-variant x
                imagepipe watch queue --dest out --exit-when-empty --jobz 2
                imagepipe config batch --dest out --retention 3
                imagepipe batch photos --dest out --variant 'a=1x1,jpeg,q1' --jobs 2 --dry-run
                ```

                ```
                imagepipe queue status|retry|purge postgres://...
                imagepipe queue prune postgres://... [--older-than DAYS] [--oldest DAYS]
                ```

                Or `imagepipe report m.jsonl --out r.html`.
                """)
        let linkProblems = page.links().compactMap { page.problem(with: $0) }
        #expect(linkProblems.count == 2, "\(linkProblems)")
        #expect(linkProblems.contains { $0.contains("no-such-page.md") })
        #expect(linkProblems.contains { $0.contains("#no-such-heading") })
        let tool = try DescribedCommand.builtTool()
        let problems = page.commands().map { tool.problems(with: $0) }
        #expect(problems.map(\.count) == [1, 1, 1, 1, 1, 0, 1, 1, 1], "\(problems)")
        let all = problems.joined().joined(separator: "\n")
        for word in ["--no-such-option", "bach", "--preset-variant", "--jobz", "--retention", "purge", "--oldest", "--out"] {
            #expect(all.contains(word), "\(word) is not reported in\n\(all)")
        }
    }
}

// MARK: - Pages

/// A Markdown page of the repository: the README or one under docs/.
struct DocumentationPage: Sendable, CustomTestStringConvertible {
    /// Its path in the repository: `README.md`, `docs/usage.md`.
    let path: String
    let text: String

    var testDescription: String { path }
    var lines: [String] { text.components(separatedBy: "\n").dropLast(text.hasSuffix("\n") ? 1 : 0).map { $0 } }

    /// The marker that makes the next shell block run.
    static let runMarker = "<!-- docs-test: runs in a scratch folder, in order -->"
    /// Every marker that makes a block run begins so; it may go on to name servers (`, with S3`).
    static let runMarkerStem = "<!-- docs-test: runs in a scratch folder, in order"
    /// The marker of a block that shows what the block run before it prints.
    static let printsMarker = "<!-- docs-test: the block above prints -->"

    /// The lines of `expected` that no line of `output` matches, each said as a problem; `…` in an
    /// expected line stands for any text, and its other parts must come in order.
    static func missing(_ expected: [String], from output: CommandRunner.Output) -> [String] {
        let lines = (output.stdout + "\n" + output.stderr).components(separatedBy: "\n")
        return expected.filter { !$0.isEmpty }.compactMap { want in
            let parts = want.components(separatedBy: "…")
            let found = lines.contains { line in
                guard line.hasPrefix(parts[0]), line.hasSuffix(parts[parts.count - 1]) else { return false }
                var rest = line[...]
                for part in parts {
                    guard let range = rest.range(of: part) else { return false }
                    rest = rest[range.upperBound...]
                }
                return true
            }
            return found ? nil : "the output has no line \(want)"
        }
    }

    static func load(_ path: String) throws -> DocumentationPage {
        DocumentationPage(path: path, text: try String(contentsOfFile: Fixtures.repository + "/" + path, encoding: .utf8))
    }

    /// The README and every page under docs/.
    static func all() throws -> [DocumentationPage] {
        let docs = try FileManager.default.contentsOfDirectory(atPath: Fixtures.repository + "/docs")
            .filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }
        return try (["README.md"] + docs).map(load)
    }

    /// A fenced code block.
    struct Block {
        /// What follows the opening fence: `sh`, `json`, or nothing.
        var info: String
        /// The 1-based line of its first content line.
        var line: Int
        var lines: [String]
        /// The `<!-- docs-test: … -->` comment right before it, if one stands there.
        var marker: String?

        var isShell: Bool { ["sh", "shell", "bash", "console"].contains(info) }
        /// Blocks of data or another language, where an `imagepipe` at a line's start is no command.
        var isData: Bool { ["json", "sql", "toml", "yaml", "yml", "html", "swift", "python", "promql"].contains(info) }

        /// Lines joined where they end in a backslash (and, outside shell blocks, where the next is
        /// indented, as a synopsis goes on), each with the number of its first line.
        var logicalLines: [(number: Int, text: String)] {
            var result: [(number: Int, text: String)] = []
            var pending: (number: Int, text: String)?
            let indent = lines.first.map { $0.prefix { $0 == " " }.count } ?? 0
            for (offset, raw) in lines.enumerated() {
                var text = raw
                if !isShell, pending == nil, let last = result.last, text.dropFirst(indent).first == " " {
                    result.removeLast()
                    pending = last
                }
                let continues = text.hasSuffix("\\")
                if continues { text.removeLast() }
                if var open = pending {
                    open.text += " " + text
                    pending = open
                } else {
                    pending = (line + offset, text)
                }
                if !continues, let done = pending {
                    result.append(done)
                    pending = nil
                }
            }
            if let pending { result.append(pending) }
            return result
        }
    }

    /// The page's fenced code blocks.
    func blocks() -> [Block] { scanned().blocks }

    func runnableBlocks() -> [Block] { blocks().filter { $0.isShell && $0.marker?.hasPrefix(Self.runMarkerStem) == true } }

    /// The one shell block whose marker starts with `prefix` (a test of its own runs it).
    func block(markedWith prefix: String) throws -> Block {
        let found = blocks().filter { $0.isShell && $0.marker?.hasPrefix(prefix) == true }
        return try #require(found.count == 1 ? found.first : nil, "\(path) has \(found.count) shell blocks marked \(prefix)")
    }

    /// The page with every fenced block's lines emptied (line numbers kept), and its blocks.
    private func scanned() -> (prose: [String], blocks: [Block]) {
        var prose: [String] = []
        var blocks: [Block] = []
        var open: Block?
        var lastProse = ""
        for (index, line) in lines.enumerated() {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if var block = open {
                if trimmed == "```" {
                    blocks.append(block)
                    open = nil
                } else {
                    block.lines.append(line)
                    open = block
                }
                prose.append("")
            } else if trimmed.hasPrefix("```") {
                open = Block(
                    info: String(trimmed.dropFirst(3)).trimmingCharacters(in: .whitespaces), line: index + 2, lines: [],
                    marker: lastProse.hasPrefix("<!-- docs-test:") ? lastProse : nil)
                prose.append("")
            } else {
                prose.append(line)
                if !trimmed.isEmpty { lastProse = trimmed }
            }
        }
        return (prose, blocks)
    }

    /// The prose with inline code blanked out (newlines kept), so that neither links nor headings are
    /// looked for inside code.
    private func proseWithoutCode() -> String {
        var result = ""
        var inCode = false
        for character in scanned().prose.joined(separator: "\n") {
            if character == "`" {
                inCode.toggle()
                result.append(" ")
            } else {
                result.append(inCode && character != "\n" ? " " : character)
            }
        }
        return result
    }

    /// The anchors of the page's headings, as GitHub makes them: lowercased, punctuation dropped, spaces
    /// as hyphens, a repeated heading numbered `-1`, `-2`.
    func anchors() -> Set<String> {
        var seen: [String: Int] = [:]
        var anchors: Set<String> = []
        for line in scanned().prose {
            guard line.hasPrefix("#") else { continue }
            let hashes = line.prefix { $0 == "#" }
            guard hashes.count <= 6, line.dropFirst(hashes.count).first == " " else { continue }
            let title = line.dropFirst(hashes.count).trimmingCharacters(in: .whitespaces)
            var slug = ""
            for character in title.lowercased() {
                if character.isLetter || character.isNumber || character == "-" || character == "_" {
                    slug.append(character)
                } else if character == " " {
                    slug.append("-")
                }
            }
            let count = seen[slug, default: 0]
            anchors.insert(count == 0 ? slug : "\(slug)-\(count)")
            seen[slug] = count + 1
        }
        return anchors
    }

    /// A link or image in the prose.
    struct Link {
        /// The 1-based line where it starts.
        var line: Int
        /// What is between the parentheses, without a title.
        var target: String
    }

    func links() -> [Link] {
        let prose = proseWithoutCode()
        let pattern = try! NSRegularExpression(pattern: #"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^()\s]+)(?:\s+"[^"]*")?\)"#)
        let whole = NSRange(prose.startIndex..., in: prose)
        return pattern.matches(in: prose, range: whole).map { match in
            let start = Range(match.range, in: prose)!.lowerBound
            let line = prose[..<start].filter { $0 == "\n" }.count + 1
            return Link(line: line, target: String(prose[Range(match.range(at: 1), in: prose)!]))
        }
    }

    /// Why a relative link does not resolve, or nil when it does (or leaves the repository by URL).
    func problem(with link: Link) -> String? {
        let target = link.target
        if target.range(of: #"^[A-Za-z][A-Za-z0-9+.-]*:"#, options: .regularExpression) != nil { return nil }
        let place = "\(path):\(link.line): (\(target))"
        let parts = target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
        let file = String(parts[0]).removingPercentEncoding ?? String(parts[0])
        let anchor = parts.count > 1 ? String(parts[1]) : ""
        if file.hasPrefix("/") { return "\(place) is absolute; links are relative to the page" }
        guard let resolved = file.isEmpty ? path : Self.resolve(file, from: path) else {
            return "\(place) leaves the repository"
        }
        guard file.isEmpty || FileManager.default.fileExists(atPath: Fixtures.repository + "/" + resolved) else {
            return "\(place): no file \(resolved)"
        }
        guard !anchor.isEmpty else { return nil }
        guard resolved.hasSuffix(".md") else { return "\(place): an anchor into \(resolved), which is not a Markdown page" }
        guard let linked = resolved == path ? self : try? Self.load(resolved) else { return "\(place): cannot read \(resolved)" }
        return linked.anchors().contains(anchor) ? nil : "\(place): no heading #\(anchor) in \(resolved)"
    }

    /// `relative` seen from the page at `page`, as a path in the repository; nil when it goes above it.
    static func resolve(_ relative: String, from page: String) -> String? {
        var parts = page.split(separator: "/").dropLast().map(String.init)
        for part in relative.split(separator: "/", omittingEmptySubsequences: true) {
            switch part {
            case ".": continue
            case "..":
                guard !parts.isEmpty else { return nil }
                parts.removeLast()
            default: parts.append(String(part))
            }
        }
        return parts.joined(separator: "/")
    }

    /// Every `imagepipe …` command the page shows: in shell blocks (strict), in other blocks that are not
    /// data, and in inline code (loose).
    func commands() -> [ShownCommand] {
        var shown: [ShownCommand] = []
        for block in blocks() where !block.isData {
            for line in block.logicalLines {
                var text = line.text.trimmingCharacters(in: .whitespaces)
                if text.hasPrefix("$ ") { text.removeFirst(2) }
                let commands = block.isShell ? ShellWords.commands(in: text) : [ShellWords.words(in: text)]
                for words in commands {
                    guard let command = ShownCommand(words: words, line: line.number, text: text, strict: block.isShell) else { continue }
                    shown.append(command)
                }
            }
        }
        // Inline code: the prose with blocks emptied, scanned for backquoted spans.
        let prose = scanned().prose.joined(separator: "\n")
        let pattern = try! NSRegularExpression(pattern: "`([^`]+)`")
        for match in pattern.matches(in: prose, range: NSRange(prose.startIndex..., in: prose)) {
            let span = String(prose[Range(match.range(at: 1), in: prose)!]).replacingOccurrences(of: "\n", with: " ")
            let start = Range(match.range, in: prose)!.lowerBound
            let line = prose[..<start].filter { $0 == "\n" }.count + 1
            guard let command = ShownCommand(words: ShellWords.words(in: span), line: line, text: span, strict: false) else { continue }
            shown.append(command)
        }
        return shown
    }
}

/// One `imagepipe …` command as a page shows it.
struct ShownCommand {
    /// The words after the program's name.
    var arguments: [String]
    var line: Int
    var text: String
    /// From a shell block: every word is parsed. Otherwise only the subcommand and the options named.
    var strict: Bool

    /// Nil unless `words`, after `NAME=value` assignments and `sudo`/`env`, start with a program called
    /// `imagepipe` (or `.build/release/imagepipe`) and go on.
    init?(words: [String], line: Int, text: String, strict: Bool) {
        var words = words[...]
        while let first = words.first,
            first == "sudo" || first == "env" || first == "$"
                || first.range(of: "^[A-Za-z_][A-Za-z0-9_]*=", options: .regularExpression) != nil
        {
            words.removeFirst()
        }
        guard let program = words.first, program.split(separator: "/").last == "imagepipe", words.count > 1 else { return nil }
        arguments = Array(words.dropFirst())
        self.line = line
        self.text = text.split(separator: " ").joined(separator: " ")
        self.strict = strict
    }
}

// MARK: - Shell words

enum ShellWords {
    /// The simple commands of a shell line, split into words as the shell would: quotes and backslashes
    /// honoured, a comment dropped, redirections and their targets left out, split at `|`, `;`, `&`.
    static func commands(in line: String) -> [[String]] { split(line, operators: true) }

    /// The words of a synopsis or inline code: quotes honoured and a trailing comment dropped, but `|`,
    /// `[` and the like kept as parts of words (`status|retry|prune`, `[--jobs N]`).
    static func words(in line: String) -> [String] { split(line, operators: false).first ?? [] }

    private static func split(_ line: String, operators: Bool) -> [[String]] {
        var commands: [[String]] = [[]]
        var word: String?
        var quote: Character?
        var escaped = false
        var dropNextWord = false
        let characters = Array(line)
        func finish() {
            guard let done = word else { return }
            word = nil
            if dropNextWord {
                dropNextWord = false
            } else {
                commands[commands.count - 1].append(done)
            }
        }
        var index = 0
        while index < characters.count {
            let character = characters[index]
            index += 1
            if escaped {
                word = (word ?? "") + String(character)
                escaped = false
            } else if let open = quote {
                if character == open {
                    quote = nil
                } else if character == "\\" && open == "\"" {
                    escaped = true
                } else {
                    word = (word ?? "") + String(character)
                }
            } else if character == "'" || character == "\"" {
                quote = character
                word = word ?? ""
            } else if character == "\\" {
                escaped = true
            } else if character == " " || character == "\t" {
                finish()
            } else if character == "#" && word == nil {
                break
            } else if operators && (character == "|" || character == ";" || character == "&") {
                finish()
                commands.append([])
            } else if operators && (character == ">" || character == "<") {
                if let digits = word, !digits.isEmpty, digits.allSatisfy(\.isNumber) { word = nil }
                finish()
                while index < characters.count && characters[index] == ">" { index += 1 }
                if index < characters.count && characters[index] == "&" {
                    index += 1
                    while index < characters.count && characters[index].isNumber { index += 1 }
                } else {
                    dropNextWord = true
                }
            } else {
                word = (word ?? "") + String(character)
            }
        }
        finish()
        return commands.filter { !$0.isEmpty }
    }
}

// MARK: - The built binary's commands

/// A command as argument-parser describes it in `--experimental-dump-help`.
struct DescribedCommand {
    var name: String
    var subcommands: [String: DescribedCommand]
    /// Every spelling it shows (`--jobs`, `-o`), and whether it takes a value.
    var options: [String: Bool]
    /// Hidden options: they carry values between imagepipe's own layers and are not for pages to show.
    var hidden: Set<String>
    /// Whether a positional takes all the words after it (`config` passes them to `batch` or `watch`).
    var passesThrough: Bool

    /// The command `config` checks when its first word names none (see ConfigCommand).
    static let passThroughDefault = ["config": "watch"]

    /// The root `imagepipe` command of the built binary.
    static func builtTool() throws -> DescribedCommand {
        let output = try CommandRunner.run(["--experimental-dump-help"])
        let json = try #require(try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any])
        return try DescribedCommand(try #require(json["command"] as? [String: Any]))
    }

    init(_ json: [String: Any]) throws {
        name = try #require(json["commandName"] as? String)
        var subcommands: [String: DescribedCommand] = [:]
        for sub in json["subcommands"] as? [[String: Any]] ?? [] {
            let command = try DescribedCommand(sub)
            subcommands[command.name] = command
        }
        self.subcommands = subcommands
        var options: [String: Bool] = [:]
        var hidden: Set<String> = []
        var passesThrough = false
        for argument in json["arguments"] as? [[String: Any]] ?? [] {
            let kind = argument["kind"] as? String
            if kind == "positional" {
                if argument["parsingStrategy"] as? String == "allRemainingInput" { passesThrough = true }
                continue
            }
            for spelling in argument["names"] as? [[String: Any]] ?? [] {
                guard let name = spelling["name"] as? String else { continue }
                let written = (spelling["kind"] as? String == "long" ? "--" : "-") + name
                if argument["shouldDisplay"] as? Bool == false {
                    hidden.insert(written)
                } else {
                    options[written] = kind == "option"
                }
            }
        }
        self.options = options
        self.hidden = hidden
        self.passesThrough = passesThrough
    }

    /// What is wrong with a shown command: an unknown subcommand or option.
    func problems(with shown: ShownCommand) -> [String] {
        var problems: [String] = []
        var commands = [self]
        var path = "imagepipe"
        var words = shown.arguments[...]
        // The subcommands, `queue status` or, in a synopsis, `queue status|retry|prune`.
        while let first = words.first, !commands[0].subcommands.isEmpty {
            let word = shown.strict ? first : Self.bare(first)
            let names = shown.strict ? [word] : word.split(separator: "|").map(String.init)
            let found = names.compactMap { name in commands[0].subcommands[name] }
            if !found.isEmpty && found.count == names.count {
                commands = found
                path += " " + word
                words.removeFirst()
                continue
            }
            // A shell block names a subcommand wherever an option does not stand. In a synopsis, SOURCE or
            // `...` is a placeholder, and a lower-case word, or a list with one subcommand in it, names some.
            let named =
                shown.strict
                ? !word.hasPrefix("-")
                : !found.isEmpty || word.range(of: "^[a-z][a-z0-9-]*$", options: .regularExpression) != nil
            if named {
                let unknown = names.filter { commands[0].subcommands[$0] == nil }
                problems.append("`\(path)` has no subcommand \(unknown.joined(separator: ", "))")
                return problems
            }
            break
        }
        // `config batch …` is checked as `batch …`.
        if commands.count == 1, commands[0].passesThrough {
            if let first = words.first, let named = subcommands[first], Self.passThroughDefault[commands[0].name] != nil {
                commands = [named]
                path += " " + first
                words.removeFirst()
            } else if let fallback = Self.passThroughDefault[commands[0].name].flatMap({ subcommands[$0] }) {
                commands = [fallback]
            } else {
                return problems
            }
        }
        func known(_ option: String) -> Bool? {
            commands.lazy.compactMap { $0.options[option] }.first
        }
        func report(_ option: String) {
            let why = commands.contains { $0.hidden.contains(option) } ? "hides" : "has no"
            problems.append("`\(path)` \(why) option \(option)")
        }
        if shown.strict {
            while let word = words.popFirst() {
                if word == "--" { break }
                guard word.hasPrefix("-"), word != "-" else { continue }
                let option = String(word.prefix { $0 != "=" })
                guard let takesValue = known(option) else {
                    report(option)
                    continue
                }
                if takesValue && !word.contains("=") { words = words.dropFirst() }
            }
        } else {
            for word in words {
                let bare = Self.bare(word)
                let isOption = bare.hasPrefix("--") ? bare.count > 2 : bare.hasPrefix("-") && bare.dropFirst().first?.isLetter == true
                guard isOption else { continue }
                let option = String(bare.prefix { $0 != "=" && $0 != "|" })
                if known(option) == nil { report(option) }
            }
        }
        return problems
    }

    /// A synopsis word without the brackets and punctuation around it: `[--jobs` → `--jobs`.
    static func bare(_ word: String) -> String {
        var word = Substring(word)
        while let first = word.first, "[(".contains(first) { word.removeFirst() }
        while let last = word.last, "]),.;:".contains(last) { word.removeLast() }
        return String(word)
    }
}
