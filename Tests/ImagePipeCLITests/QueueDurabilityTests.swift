// What `watch` files under done/ is on disk before its claim goes: the real binary under strace, with the queue's syncs in rounds of syncfs.
import Foundation
import ImagePipeTestSupport
import Testing

@Suite(.offThePool) struct QueueDurabilityTests {
    let directory = TemporaryDirectory()

    /// `watch --exit-when-empty` over `names` delivered into a queue directory, traced, with
    /// `IMAGEPIPE_DURABILITY_FLUSH` set to `flush` and each call of `delayed` slowed by 60 ms (so that
    /// jobs finish while a round runs, as they do on a busy disk): the calls. Six jobs compress at once
    /// whatever the cores, so that jobs finish together on a loaded runner too (with one per core and
    /// 20 ms, CI once saw each of the twelve finish alone, after the round before it).
    func tracedWatch(_ names: [String], flush: String, delaying delayed: String? = nil) throws -> [SystemCallTrace.Call] {
        for (index, name) in names.enumerated() {
            CommandRunner.copyFixture("images/exif-orientation/Landscape_\(index % 8 + 1).jpg", to: directory, as: "queue/inbox/" + name)
        }
        let probe = try CommandRunner.run(executable: "/usr/bin/strace", ["-qq", "-o", "/dev/null", "/bin/true"])
        try #require(probe.status == 0, "strace cannot trace here (make test-deps installs it; ptrace must be allowed): \(probe.stderr)")
        let trace = directory.url("trace.txt")
        let run = try CommandRunner.run(
            executable: "/usr/bin/strace",
            [
                "-f", "-y", "-qq", "-s", "4000", "-e",
                "trace=fsync,syncfs,sync_file_range,rename,renameat2,link,linkat,unlink,unlinkat,write", "-o", trace,
            ] + (delayed.map { ["-e", "inject=\($0):delay_exit=60000"] } ?? []) + [
                CommandRunner.binary, "watch", directory.url("queue"), "--dest", directory.url("out"), "--exit-when-empty",
                "--status-interval", "0", "--variant", "small=64x64,jpeg,q80",
            ] + (delayed == nil ? [] : ["--jobs", "6"]), environment: ["IMAGEPIPE_DURABILITY_FLUSH": flush])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(directory.files(under: "queue/done").count == names.count * 2, "\(directory.files(under: "queue"))")
        return SystemCallTrace(try String(contentsOfFile: trace, encoding: .utf8)).calls
    }

    /// The claim's release of `name`: the original's name in the worker's area unlinked after `after`.
    /// A record's move into place, the temporary file it came from, and that file's last write before it.
    func recordMove(
        _ record: String, in calls: [SystemCallTrace.Call]
    ) throws -> (
        move: SystemCallTrace.Call, temporary: String, written: SystemCallTrace.Call
    ) {
        let move = try #require(
            calls.first { $0.name.hasPrefix("rename") && $0.paths.last == record && $0.result == "0" }, "no move into \(record)")
        let temporary = try #require(move.paths.first)
        let written = try #require(calls.last { $0.name == "write" && $0.fdPath == temporary && $0.end < move.start }, "\(temporary) written")
        return (move, temporary, written)
    }

    func claimRelease(of name: String, after start: Int, in calls: [SystemCallTrace.Call]) -> SystemCallTrace.Call? {
        calls.first {
            $0.name.hasPrefix("unlink") && $0.result == "0" && $0.start > start
                && $0.paths.last.map { $0.contains("/processing/") && $0.hasSuffix("/" + name) } == true
        }
    }

    @Test func withSyncfsEachDoneRecordIsCommittedBeforeItsNameAndItsNameBeforeTheClaimIsReleased() throws {
        let names = ["one.jpg", "two.jpg", "three.jpg", "four.jpg"]
        let calls = try tracedWatch(names, flush: "syncfs")
        let queue = directory.url("queue")
        let commits = calls.filter { $0.name == "syncfs" && $0.result == "0" }
        #expect(
            !calls.contains { $0.name == "fsync" && $0.fdPath?.hasPrefix(queue + "/") == true },
            "the queue's records and moves share rounds of syncfs instead of fsyncs of their own: \(calls.filter { $0.name == "fsync" }.map(\.arguments))"
        )
        for name in names {
            let record = queue + "/done/" + name + ".json"
            let (move, temporary, written) = try recordMove(record, in: calls)
            let commit = try #require(
                commits.first { $0.start > written.end && $0.end < move.start }, "\(record): a syncfs after its bytes and before its move")
            #expect(
                calls.contains { $0.name == "sync_file_range" && $0.fdPath == temporary && $0.start > commit.end && $0.end < move.start },
                "\(record): its own write-back error is read before its move")
            let release = try #require(claimRelease(of: name, after: move.end, in: calls), "\(name): its claim is released")
            #expect(
                commits.contains { $0.start > move.end && $0.end < release.start },
                "\(record): a syncfs after its move and before the claim is released")
        }
    }

    /// Fsyncs one after another (the mechanism off ext4 and XFS), each delayed: records of jobs
    /// that finish while a round runs share the next one, so `done/` is fsynced once per round, not
    /// once per record, and every record still goes bytes, name, directory, release.
    @Test func jobsFinishingTogetherShareOneRoundOfFsyncsForTheirRecords() throws {
        let names = (1...12).map { "job\($0).jpg" }
        let calls = try tracedWatch(names, flush: "fsync", delaying: "fsync")
        let queue = directory.url("queue")
        let fsyncs = calls.filter { $0.name == "fsync" && $0.result == "0" }
        let doneSyncs = fsyncs.filter { $0.fdPath == queue + "/done" }
        for name in names {
            let record = queue + "/done/" + name + ".json"
            let (move, temporary, written) = try recordMove(record, in: calls)
            #expect(
                fsyncs.contains { $0.fdPath == temporary && $0.start > written.end && $0.end < move.start },
                "\(record): its bytes fsynced before its move")
            let release = try #require(claimRelease(of: name, after: move.end, in: calls), "\(name): its claim is released")
            #expect(
                doneSyncs.contains { $0.start > move.end && $0.end < release.start }, "\(record): done/ fsynced after its move, before its release")
        }
        // The records moved into place between one fsync of done/ and the next: more than one.
        let recordMoves = calls.filter {
            $0.name.hasPrefix("rename") && $0.result == "0" && $0.paths.last.map { $0.hasPrefix(queue + "/done/") && $0.hasSuffix(".json") } == true
        }
        var previous = -1, largest = 0
        for sync in doneSyncs {
            largest = max(largest, recordMoves.count(where: { $0.start > previous && $0.end < sync.start }))
            previous = sync.end
        }
        #expect(largest >= 2, "no round of fsyncs of done/ covered two records")
        #expect(
            doneSyncs.count < names.count,
            "\(names.count) records, and done/ fsynced \(doneSyncs.count) times: each record was made durable alone")
    }
}
