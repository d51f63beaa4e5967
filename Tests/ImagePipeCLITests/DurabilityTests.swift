// What `batch` reports done is on disk: the real binary under strace, its system calls checked in order.
import Foundation
import ImagePipeTestSupport
import Testing

@Suite(.offThePool) struct DurabilityTests {
    let directory = TemporaryDirectory()

    /// A traced `batch` of nested images with `IMAGEPIPE_DURABILITY_FLUSH` set to `flush`: its calls,
    /// its manifest's records and the log.
    func tracedBatch(flush: String) throws -> (calls: [SystemCallTrace.Call], records: [[String: Any]], log: String) {
        // Nested, so the run makes directories; several images, so puts share rounds of syncs.
        let names = ["a/one.jpg", "a/two.jpg", "b/c/three.jpg", "b/c/four.jpg", "b/five.jpg", "six.jpg"]
        for (index, name) in names.enumerated() {
            CommandRunner.copyFixture("images/exif-orientation/Landscape_\(index + 1).jpg", to: directory, as: "src/" + name)
        }
        let probe = try CommandRunner.run(executable: "/usr/bin/strace", ["-qq", "-o", "/dev/null", "/bin/true"])
        try #require(probe.status == 0, "strace cannot trace here (make test-deps installs it; ptrace must be allowed): \(probe.stderr)")
        let trace = directory.url("trace.txt")
        let run = try CommandRunner.run(
            executable: "/usr/bin/strace",
            [
                "-f", "-y", "-qq", "-s", "4000", "-e",
                "trace=fsync,syncfs,sync_file_range,rename,renameat2,link,linkat,mkdir,mkdirat,write", "-o", trace,
                CommandRunner.binary, "batch", directory.url("src"), "--dest", directory.url("out"),
                "--manifest", directory.url("manifest.jsonl"), "--variant", "small=64x64,jpeg,q80", "--variant", "thumb=32x32,webp,q70",
            ], environment: ["IMAGEPIPE_DURABILITY_FLUSH": flush])
        #expect(run.status == 0, "\(run.stderr)")
        let log = try String(contentsOfFile: trace, encoding: .utf8)
        let records = try String(contentsOfFile: directory.url("manifest.jsonl"), encoding: .utf8).split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
        }
        #expect(records.count == names.count)
        return (SystemCallTrace(log).calls, records, log)
    }

    /// The manifest write that says `record`'s source is done.
    func manifestLine(of record: [String: Any], in calls: [SystemCallTrace.Call], log: String) throws -> SystemCallTrace.Call {
        let source = try #require(record["source"] as? String)
        return try #require(
            calls.first {
                $0.name == "write" && $0.fdPath?.hasSuffix("/manifest.jsonl") == true && $0.arguments.contains(#"\"source\":\"\#(source)\""#)
            },
            "no manifest write for \(source); the trace's lines naming it: \(log.split(separator: "\n").filter { $0.contains(source) }.map { $0.prefix(300) })"
        )
    }

    /// Fsyncs one after another, and fsyncs issued together from threads of the round's own: the
    /// same calls, in the same order for each file.
    @Test(arguments: ["fsync", "together"])
    func eachOutputIsSyncedBeforeItsRenameAndItsDirectoriesBeforeTheManifestSaysDone(flush: String) throws {
        let (calls, records, log) = try tracedBatch(flush: flush)
        let root = directory.url("out")
        let fsyncs = calls.filter { $0.name == "fsync" && $0.result == "0" }
        let madeDirectories = calls.filter { $0.name.hasPrefix("mkdir") && $0.result == "0" }
        #expect(
            Set(madeDirectories.compactMap(\.paths.first)).isSuperset(of: ["a", "b", "b/c"].map { root + "/" + $0 }),
            "the run made the output directories, so their parents' fsyncs are checked below")
        var outputs = 0
        for record in records {
            let line = try manifestLine(of: record, in: calls, log: log)
            for variant in try #require(record["variants"] as? [[String: Any]]) {
                let path = root + "/" + (try #require(variant["key"] as? String))
                outputs += 1
                let move = try #require(
                    calls.first { ["rename", "renameat2", "link", "linkat"].contains($0.name) && $0.paths.last == path && $0.result == "0" },
                    "no move into \(path)")
                let temporary = try #require(move.paths.first)
                #expect(
                    fsyncs.contains { $0.fdPath == temporary && $0.end < move.start },
                    "\(path): its file is fsynced before it is moved into place")
                let parent = (path as NSString).deletingLastPathComponent
                #expect(
                    fsyncs.contains { $0.fdPath == parent && $0.start > move.end && $0.end < line.start },
                    "\(path): its directory is fsynced after the move and before the manifest says done")
                // Every directory the run made on the way: its parent holds the new name.
                for made in madeDirectories where made.paths.first.map({ parent == $0 || parent.hasPrefix($0 + "/") }) == true {
                    let above = (made.paths[0] as NSString).deletingLastPathComponent
                    guard made.paths[0] != root else { continue }
                    #expect(
                        fsyncs.contains { $0.fdPath == above && $0.start > made.end && $0.end < line.start },
                        "\(path): \(above) is fsynced after \(made.paths[0]) was made and before the manifest says done")
                }
            }
        }
        #expect(outputs == records.count * 2)
    }

    @Test func withSyncfsEachRoundCommitsTheFilesBeforeTheirRenamesAndTheNamesBeforeTheManifestSaysDone() throws {
        let (calls, records, log) = try tracedBatch(flush: "syncfs")
        let root = directory.url("out")
        let commits = calls.filter { $0.name == "syncfs" && $0.result == "0" }
        let madeDirectories = calls.filter { $0.name.hasPrefix("mkdir") && $0.result == "0" }
        #expect(
            !calls.contains { $0.name == "fsync" && $0.fdPath?.hasPrefix(root + "/") == true && $0.fdPath?.contains("imagepipe-probe") == false },
            "one syncfs per round stands for the outputs' fsyncs")
        var outputs = 0
        for record in records {
            let line = try manifestLine(of: record, in: calls, log: log)
            for variant in try #require(record["variants"] as? [[String: Any]]) {
                let path = root + "/" + (try #require(variant["key"] as? String))
                outputs += 1
                let move = try #require(
                    calls.first { ["rename", "renameat2", "link", "linkat"].contains($0.name) && $0.paths.last == path && $0.result == "0" },
                    "no move into \(path)")
                let temporary = try #require(move.paths.first)
                let written = try #require(calls.last { $0.name == "write" && $0.fdPath == temporary && $0.end < move.start }, "\(temporary) written")
                let commit = try #require(
                    commits.first { $0.start > written.end && $0.end < move.start }, "\(path): a syncfs after its bytes and before its move")
                #expect(
                    calls.contains { $0.name == "sync_file_range" && $0.fdPath == temporary && $0.start > commit.end && $0.end < move.start },
                    "\(path): its own write-back error is read after the syncfs and before the move")
                // Its name and every directory the run made on the way to it, by one later commit.
                let made = madeDirectories.filter { made in made.paths.first.map { path.hasPrefix($0 + "/") } == true }
                let latest = ([move.end] + made.map(\.end)).max()!
                #expect(
                    commits.contains { $0.start > latest && $0.end < line.start },
                    "\(path): a syncfs after its move (and its directories' making) and before the manifest says done")
            }
        }
        #expect(outputs == records.count * 2)
    }

    @Test func aLaterRunRemovesTheTemporaryFilesAKilledRunLeftWhereItWrites() throws {
        CommandRunner.copyFixture("images/exif-orientation/Landscape_1.jpg", to: directory, as: "src/trip/beach.jpg")
        // What a killed run leaves beside the outputs it was writing, and one a live run is writing.
        let killed = directory.write("out/trip/.imagepipe-31337x1-4.tmp", "half a JPEG")
        let live = directory.write("out/trip/.imagepipe-31338x1-1.tmp", "a JPEG being written")
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-7200)], ofItemAtPath: killed)
        let run = try CommandRunner.run([
            "batch", directory.url("src"), "--dest", directory.url("out"), "--manifest", directory.url("manifest.jsonl"),
            "--variant", "small=64x64,jpeg,q80",
        ])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(FileManager.default.fileExists(atPath: directory.url("out/trip/beach-small.jpg")))
        #expect(!FileManager.default.fileExists(atPath: killed), "unwritten for two hours: no live put's")
        #expect(FileManager.default.fileExists(atPath: live))
    }
}

/// The calls of an `strace -f -y -o` log, each with where it started and ended in the log, so the
/// order of calls on different threads can be compared: a call that waited (`<unfinished ...>`)
/// ends at its `resumed` line.
struct SystemCallTrace {
    struct Call {
        var name: String
        var arguments: String
        /// Line numbers of its start and its end.
        var start: Int
        var end: Int
        var result: String

        /// The path `-y` shows for the first argument's descriptor (`7</tmp/out/a.jpg>`).
        var fdPath: String? {
            guard let open = arguments.firstIndex(of: "<"), let close = arguments[open...].firstIndex(of: ">"),
                arguments[..<open].allSatisfy(\.isNumber)
            else { return nil }
            return String(arguments[arguments.index(after: open)..<close])
        }

        /// The quoted strings among the arguments: the paths of renames, links and mkdir.
        var paths: [String] {
            arguments.split(separator: "\"", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }.map {
                String($0.element)
            }
        }
    }

    var calls: [Call] = []

    init(_ log: String) {
        var waiting: [Substring: (name: String, arguments: String, start: Int)] = [:]
        for (number, line) in log.split(separator: "\n").enumerated() {
            guard let space = line.firstIndex(of: " ") else { continue }
            let thread = line[..<space]
            // strace pads short process ids: `812   write(...)`.
            let text = line[line.index(after: space)...].drop { $0 == " " }
            if text.hasPrefix("<... ") {
                guard let started = waiting.removeValue(forKey: thread) else { continue }
                calls.append(Call(name: started.name, arguments: started.arguments, start: started.start, end: number, result: Self.result(of: text)))
            } else if let open = text.firstIndex(of: "(") {
                let name = String(text[..<open])
                let rest = text[text.index(after: open)...]
                if let unfinished = rest.range(of: " <unfinished ...>") {
                    waiting[thread] = (name, String(rest[..<unfinished.lowerBound]), number)
                } else if let equals = rest.range(of: " = ", options: .backwards), let close = rest[..<equals.lowerBound].lastIndex(of: ")") {
                    // strace pads the result to a column: `mkdir("/tmp/d", 0777)        = 0`.
                    calls.append(Call(name: name, arguments: String(rest[..<close]), start: number, end: number, result: Self.result(of: text)))
                }
            }
        }
    }

    /// What follows the last ` = `: a resumed line pads it (`<... fsync resumed>)        = 0`).
    private static func result(of line: Substring) -> String {
        guard let equals = line.range(of: " = ", options: .backwards) else { return "" }
        return String(line[equals.upperBound...].prefix { $0 != " " })
    }
}
