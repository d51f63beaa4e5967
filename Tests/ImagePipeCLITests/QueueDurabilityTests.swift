// What `watch` files under done/ is on disk before its claim goes: the real binary under strace, with the queue's syncs in rounds of syncfs.
import Foundation
import ImagePipeTestSupport
import Testing

@Suite(.offThePool) struct QueueDurabilityTests {
    let directory = TemporaryDirectory()

    @Test func withSyncfsEachDoneRecordIsCommittedBeforeItsNameAndItsNameBeforeTheClaimIsReleased() throws {
        let names = ["one.jpg", "two.jpg", "three.jpg", "four.jpg"]
        for (index, name) in names.enumerated() {
            CommandRunner.copyFixture("images/exif-orientation/Landscape_\(index + 1).jpg", to: directory, as: "queue/inbox/" + name)
        }
        let probe = try CommandRunner.run(executable: "/usr/bin/strace", ["-qq", "-o", "/dev/null", "/bin/true"])
        try #require(probe.status == 0, "strace cannot trace here (make test-deps installs it; ptrace must be allowed): \(probe.stderr)")
        let trace = directory.url("trace.txt")
        let queue = directory.url("queue")
        let run = try CommandRunner.run(
            executable: "/usr/bin/strace",
            [
                "-f", "-y", "-qq", "-s", "4000", "-e",
                "trace=fsync,syncfs,sync_file_range,rename,renameat2,link,linkat,unlink,unlinkat,write", "-o", trace,
                CommandRunner.binary, "watch", queue, "--dest", directory.url("out"), "--exit-when-empty", "--status-interval", "0",
                "--variant", "small=64x64,jpeg,q80",
            ], environment: ["IMAGEPIPE_DURABILITY_FLUSH": "syncfs"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(directory.files(under: "queue/done").count == names.count * 2, "\(directory.files(under: "queue"))")
        let calls = SystemCallTrace(try String(contentsOfFile: trace, encoding: .utf8)).calls
        let commits = calls.filter { $0.name == "syncfs" && $0.result == "0" }
        #expect(
            !calls.contains { $0.name == "fsync" && $0.fdPath?.hasPrefix(queue + "/") == true },
            "the queue's records and moves share rounds of syncfs instead of fsyncs of their own: \(calls.filter { $0.name == "fsync" }.map(\.arguments))"
        )
        for name in names {
            let record = queue + "/done/" + name + ".json"
            let move = try #require(
                calls.first { $0.name.hasPrefix("rename") && $0.paths.last == record && $0.result == "0" }, "no move into \(record)")
            let temporary = try #require(move.paths.first)
            let written = try #require(calls.last { $0.name == "write" && $0.fdPath == temporary && $0.end < move.start }, "\(temporary) written")
            let commit = try #require(
                commits.first { $0.start > written.end && $0.end < move.start }, "\(record): a syncfs after its bytes and before its move")
            #expect(
                calls.contains { $0.name == "sync_file_range" && $0.fdPath == temporary && $0.start > commit.end && $0.end < move.start },
                "\(record): its own write-back error is read before its move")
            // The claim's release: the original's name in the worker's area.
            let release = try #require(
                calls.first {
                    $0.name.hasPrefix("unlink") && $0.result == "0" && $0.start > move.end
                        && $0.paths.last.map { $0.contains("/processing/") && $0.hasSuffix("/" + name) } == true
                }, "\(name): its claim is released")
            #expect(
                commits.contains { $0.start > move.end && $0.end < release.start },
                "\(record): a syncfs after its move and before the claim is released")
        }
    }
}
