// What `batch` reports done is on disk: the real binary under strace, its system calls checked in order.
import Foundation
import ImagePipeTestSupport
import Testing

@Suite struct DurabilityTests {
    let directory = TemporaryDirectory()

    @Test func eachOutputIsSyncedBeforeItsRenameAndItsDirectoriesBeforeTheManifestSaysDone() throws {
        // Nested, so the run makes directories; several images, so puts share rounds of fsyncs.
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
                "-f", "-y", "-qq", "-s", "4000", "-e", "trace=fsync,rename,renameat2,link,linkat,mkdir,mkdirat,write", "-o", trace,
                CommandRunner.binary, "batch", directory.url("src"), "--dest", directory.url("out"),
                "--manifest", directory.url("manifest.jsonl"), "--variant", "small=64x64,jpeg,q80", "--variant", "thumb=32x32,webp,q70",
            ])
        #expect(run.status == 0, "\(run.stderr)")
        let log = try String(contentsOfFile: trace, encoding: .utf8)
        let calls = SystemCallTrace(log).calls
        let records = try String(contentsOfFile: directory.url("manifest.jsonl"), encoding: .utf8).split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
        }
        #expect(records.count == names.count)

        let root = directory.url("out")
        let fsyncs = calls.filter { $0.name == "fsync" && $0.result == "0" }
        let madeDirectories = calls.filter { $0.name.hasPrefix("mkdir") && $0.result == "0" }
        #expect(
            Set(madeDirectories.compactMap(\.paths.first)).isSuperset(of: ["a", "b", "b/c"].map { root + "/" + $0 }),
            "the run made the output directories, so their parents' fsyncs are checked below")
        var outputs = 0
        for record in records {
            let source = try #require(record["source"] as? String)
            // The manifest line that says this source is done.
            let line = try #require(
                calls.first {
                    $0.name == "write" && $0.fdPath?.hasSuffix("/manifest.jsonl") == true && $0.arguments.contains(#"\"source\":\"\#(source)\""#)
                },
                "no manifest write for \(source); the trace's lines naming it: \(log.split(separator: "\n").filter { $0.contains(source) }.map { $0.prefix(300) })"
            )
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
        #expect(outputs == names.count * 2)
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
