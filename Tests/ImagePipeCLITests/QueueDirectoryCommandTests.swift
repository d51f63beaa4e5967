import Foundation
#if canImport(Glibc)
import Glibc
#endif
import ImagePipeTestSupport
import Testing

/// `imagepipe queue status|list|retry|prune` on a queue directory, and `watch --keep-done`: the real
/// binary on real folders, a real worker's done/ and failed/.
@Suite(.offThePool, .serialized) struct QueueDirectoryCommandTests {
    let directory = TemporaryDirectory(prefix: "imagepipe-queue-cmd")
    var queue: String { directory.url("queue") }

    /// A queue a worker has worked off: `landscape.jpg` and `2024/tiny.png` done, `broken.jpg` failed
    /// (a truncated JPEG), `waiting.jpg` delivered afterwards and still in the inbox; with
    /// `notAnImage`, `notes` (a delivery that is no image) skipped into done/.
    func workedOffQueue(notAnImage: Bool = false) throws {
        InboxDelivery.deliver(Fixtures.data("images/formats/landscape.jpg"), to: queue + "/inbox", as: "landscape.jpg")
        InboxDelivery.deliver(Fixtures.data("images/formats/tiny.png"), to: queue + "/inbox", as: "2024/tiny.png")
        InboxDelivery.deliver(Fixtures.data("hostile/truncated.jpg"), to: queue + "/inbox", as: "broken.jpg")
        if notAnImage { InboxDelivery.deliver(Data("a producer's mistake".utf8), to: queue + "/inbox", as: "notes") }
        let run = try CommandRunner.run([
            "watch", queue, "--dest", directory.url("out"), "--variant", "t=32x32,jpeg,q70", "--jobs", "1", "--exit-when-empty",
            "--status-interval", "0",
        ])
        #expect(run.status == 0, "\(run.stderr)")
        InboxDelivery.deliver(Fixtures.data("images/formats/tiny.png"), to: queue + "/inbox", as: "waiting.jpg")
    }

    /// Sets a file's modification time `seconds` into the past.
    func age(_ relative: String, by seconds: Int) {
        var times = [timespec(tv_sec: time(nil) - seconds, tv_nsec: 0), timespec(tv_sec: time(nil) - seconds, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, queue + "/" + relative, &times, 0) == 0)
    }

    @Test func statusCountsEveryFolderNamesWhoRunsWhatAndWhyJobsFailed() throws {
        try workedOffQueue(notAnImage: true)
        // A claim area of a live worker (this test holds its lock) and one whose worker died.
        let live = queue + "/processing/host-1-live"
        try FileManager.default.createDirectory(atPath: live, withIntermediateDirectories: true)
        directory.write("queue/processing/host-1-live/.lock", "pid 1 on host\n")
        directory.write("queue/processing/host-1-live/running.jpg", "bytes")
        let lock = open(live + "/.lock", O_RDWR)
        defer { close(lock) }
        #expect(flock(lock, LOCK_EX | LOCK_NB) == 0)
        directory.write("queue/processing/host-2-dead/.lock", "pid 2 on host\n")
        directory.write("queue/processing/host-2-dead/orphan.jpg", "bytes")

        let status = try CommandRunner.run(["queue", "status", queue])
        #expect(status.status == 0, "\(status.stderr)")
        let lines = status.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        for expected in ["queue\t\(queue)", "waiting\t1", "running\t2", "done\t3", "failed\t1"] {
            #expect(lines.contains(expected), "\(expected) in\n\(status.stdout)")
        }
        #expect(!lines.contains { $0.hasPrefix("cancelled") }, "a queue directory has no cancelled jobs")
        #expect(lines.contains { $0.hasPrefix("oldest_waiting_s\t") && $0 != "oldest_waiting_s\t-" })
        #expect(lines.contains { $0.hasPrefix("jobs_per_s\t") && $0 != "jobs_per_s\t0.00" }, "three jobs finished within the minute")
        let running = lines.filter { $0.contains("\trunning\t") }
        #expect(running.contains { $0.hasPrefix("running.jpg\t") && $0.contains("worker host-1-live (pid 1 on host)") && !$0.contains("abandoned") })
        #expect(running.contains { $0.hasPrefix("orphan.jpg\t") && $0.contains("host-2-dead (pid 2 on host), abandoned") }, "\(running)")
        #expect(
            lines.contains { $0.hasPrefix("broken.jpg\tfailed\t") && $0.contains("after 1 attempt, corrupt_image: ") },
            "a failed job shows its reason:\n\(status.stdout)")
        // A delivery that is no image failed nothing: it is done (skipped), not among the failures.
        #expect(!lines.contains { $0.hasPrefix("notes\t") }, "\(status.stdout)")
        #expect(!status.stdout.contains("not_an_image: not an image"), "\(status.stdout)")

        let json = try CommandRunner.run(["queue", "status", queue, "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(json.stdout)")
        #expect(object["kind"] as? String == "directory")
        #expect(object["counts"] as? [String: Int] == ["waiting": 1, "running": 2, "done": 3, "failed": 1])

        let missing = try CommandRunner.run(["queue", "status", directory.url("no-such-queue")])
        #expect(missing.status == 2 && missing.stderr.contains("\(directory.url("no-such-queue")) does not exist"), "\(missing)")
        #expect(!FileManager.default.fileExists(atPath: directory.url("no-such-queue")), "looking creates nothing")
        directory.write("not-a-queue/notes.txt", "a folder of something else")
        let other = try CommandRunner.run(["queue", "status", directory.url("not-a-queue")])
        #expect(other.status == 2 && other.stderr.contains("is not a queue directory: it has none of inbox/"), "\(other)")
    }

    /// `queue status` lists ten running jobs at most: with more, it says how many of how many it shows
    /// and the `queue list` that shows every one, which does.
    @Test func statusSaysWhenItShowsSomeOfTheRunningJobsAndHowToSeeAll() throws {
        directory.write("queue/processing/host-2-dead/.lock", "pid 2 on host\n")
        for index in 0..<15 { directory.write(String(format: "queue/processing/host-2-dead/job-%02d.jpg", index), "bytes") }
        let status = try CommandRunner.run(["queue", "status", queue])
        #expect(status.status == 0, "\(status.stderr)")
        #expect(status.stdout.contains("running\t15\n"))
        #expect(status.stdout.split(separator: "\n").count { $0.contains("\trunning\t") } == 10, "\(status.stdout)")
        let note = "imagepipe: 10 of 15 running jobs shown (longest-running first); every one: imagepipe queue list \(queue) --state running"
        #expect(status.stderr.contains(note), "\(status.stderr)")
        let all = try CommandRunner.run(["queue", "list", queue, "--state", "running"])
        #expect(all.status == 0 && all.stdout.split(separator: "\n").count == 15, "\(all)")
        #expect(try CommandRunner.run(["queue", "status", queue, "--json"]).stderr.isEmpty, "JSON stands alone")

        // Ten or fewer: every one is shown, and nothing is said.
        for index in 0..<5 { try FileManager.default.removeItem(atPath: queue + String(format: "/processing/host-2-dead/job-%02d.jpg", index)) }
        let ten = try CommandRunner.run(["queue", "status", queue])
        #expect(ten.stdout.contains("running\t10\n") && !ten.stderr.contains("shown"), "\(ten)")
    }

    @Test func listShowsEachStateAndRetryPutsFailedJobsBack() throws {
        try workedOffQueue()
        let failed = try CommandRunner.run(["queue", "list", queue, "--state", "failed"])
        #expect(failed.status == 0 && failed.stdout.split(separator: "\n").contains { $0.hasPrefix("broken.jpg\tfailed\t") }, "\(failed)")
        #expect(failed.stdout.contains("corrupt_image"))
        // `discarded`, the word for `failed` before one word named each fate, still lists them.
        let before = try CommandRunner.run(["queue", "list", queue, "--state", "discarded"])
        func jobs(_ output: CommandRunner.Output) -> [String] {
            output.stdout.split(separator: "\n").map { $0.split(separator: "\t").prefix(2).joined(separator: "\t") }
        }
        #expect(before.status == 0 && jobs(before) == jobs(failed) && !jobs(before).isEmpty, "\(before)")
        let done = try CommandRunner.run(["queue", "list", queue, "--state", "done", "--json"])
        let sources = done.stdout.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["id"] as? String
        }
        #expect(Set(sources) == ["landscape.jpg", "2024/tiny.png"], "\(done)")
        let limited = try CommandRunner.run(["queue", "list", queue, "--state", "done", "--limit", "1"])
        #expect(limited.stdout.split(separator: "\n").count == 1 && limited.stderr.contains("more done jobs"), "\(limited)")
        let cancelled = try CommandRunner.run(["queue", "list", queue, "--state", "cancelled"])
        #expect(cancelled.status == 2 && cancelled.stderr.contains("does not apply to a queue directory"), "\(cancelled)")
        // By number or, as a queue directory's user would, by file name: told what to do instead.
        for job in ["1", "broken.jpg"] {
            let cancel = try CommandRunner.run(["queue", "cancel", queue, job])
            #expect(cancel.status == 2 && cancel.stderr.contains("queue cancel does not apply to a queue directory"), "\(cancel)")
            #expect(cancel.stderr.contains("moving its file out of inbox/"), "\(cancel)")
        }

        let retry = try CommandRunner.run(["queue", "retry", queue])
        #expect(retry.status == 0 && retry.stdout == "failed/broken.jpg -> inbox/broken.jpg\n", "\(retry)")
        #expect(FileManager.default.fileExists(atPath: queue + "/inbox/broken.jpg"))
        #expect(directory.files(under: "queue/failed").isEmpty)
        let unknown = try CommandRunner.run(["queue", "retry", queue, "nothing.jpg"])
        #expect(unknown.status == 1 && unknown.stderr.contains("no failed job at nothing.jpg"), "\(unknown)")
    }

    @Test func pruneDeletesOnlyOldDoneJobsAndFailedOnesOnlyWhenAsked() throws {
        try workedOffQueue()
        age("done/landscape.jpg.json", by: 3 * 3600)
        age("failed/broken.jpg.error.json", by: 3 * 3600)
        let young = try CommandRunner.run(["queue", "prune", queue, "--older-than", "1d"])
        #expect(young.status == 0 && young.stderr.contains("deleted 0 finished job(s)"), "\(young)")
        let pruned = try CommandRunner.run(["queue", "prune", queue, "--older-than", "2h"])
        #expect(pruned.status == 0 && pruned.stderr.contains("deleted 1 finished job(s)"), "\(pruned)")
        #expect(directory.files(under: "queue/done") == ["2024/tiny.png", "2024/tiny.png.json"], "only the old one, with its record")
        #expect(directory.files(under: "queue/failed") == ["broken.jpg", "broken.jpg.error.json"], "failed/ is kept unless asked")
        #expect(directory.files(under: "queue/inbox") == ["waiting.jpg"])
        let withFailed = try CommandRunner.run(["queue", "prune", queue, "--older-than", "2h", "--include-failed"])
        #expect(withFailed.status == 0 && withFailed.stderr.contains("deleted 1 finished job(s)"), "\(withFailed)")
        #expect(directory.files(under: "queue/failed").isEmpty)
        let all = try CommandRunner.run(["queue", "prune", queue, "--older-than", "0s"])
        #expect(all.status == 0 && all.stderr.contains("deleted 1 finished job(s)"), "\(all)")
        #expect((try? FileManager.default.contentsOfDirectory(atPath: queue + "/done")) == [], "done/2024 went with its last job")
        let bad = try CommandRunner.run(["queue", "prune", queue, "--older-than", "soon"])
        #expect(bad.status == 2 && bad.stderr.contains("--older-than 'soon' is not a duration"), "\(bad)")
    }

    @Test func watchWithKeepDoneDeletesDoneJobsOnceTheyAreOldAndKeepsFailedOnes() throws {
        try FileManager.default.createDirectory(atPath: queue + "/inbox", withIntermediateDirectories: true)
        let worker = try WorkerProcess(
            [
                "watch", queue, "--dest", directory.url("out"), "--variant", "t=32x32,jpeg,q70", "--jobs", "1", "--status-interval", "0",
                "--keep-done", "2s",
            ], log: directory.url("worker.log"))
        #expect(worker.waitForLog("watching"), "\(worker.log)")
        InboxDelivery.deliver(Fixtures.data("hostile/truncated.jpg"), to: queue + "/inbox", as: "broken.jpg")
        InboxDelivery.deliver(Fixtures.data("images/formats/tiny.png"), to: queue + "/inbox", as: "2024/05/tiny.png")
        #expect(eventually(seconds: 30) { FileManager.default.fileExists(atPath: queue + "/done/2024/05/tiny.png.json") }, "\(worker.log)")
        #expect(eventually(seconds: 30) { directory.files(under: "queue/done").isEmpty }, "\(worker.log)")
        // The dated folders the jobs came in go too, once empty: done/ does not fill up with empty folders.
        #expect(
            eventually(seconds: 30) { (try? FileManager.default.contentsOfDirectory(atPath: queue + "/done")) == [] },
            "\((try? FileManager.default.subpathsOfDirectory(atPath: queue + "/done")) ?? [])")
        #expect(worker.waitForLog("deleted done jobs past their retention"), "\(worker.log)")
        #expect(directory.files(under: "queue/failed") == ["broken.jpg", "broken.jpg.error.json"])
        #expect(FileManager.default.fileExists(atPath: directory.url("out/2024/05/tiny-t.jpg")), "the outputs stay")
        worker.send(SIGTERM)
        #expect(worker.waitForExit(seconds: 30) == 0, "\(worker.log)")
    }

    /// The worker's last status line and `queue status` count the same jobs under the same words,
    /// the folders' own: a delivery that is no image is skipped into done/, so both count it done,
    /// and a failure for good is `failed` in both.
    @Test func theStatusLineAndQueueStatusAgree() throws {
        InboxDelivery.deliver(Fixtures.data("images/formats/tiny.png"), to: queue + "/inbox", as: "tiny.png")
        InboxDelivery.deliver(Fixtures.data("hostile/truncated.jpg"), to: queue + "/inbox", as: "broken.jpg")
        InboxDelivery.deliver(Data("a shopping list, not a picture\n".utf8), to: queue + "/inbox", as: "notes.txt")
        let run = try CommandRunner.run([
            "watch", queue, "--dest", directory.url("out"), "--variant", "t=32x32,jpeg,q70", "--jobs", "1", "--exit-when-empty",
            "--status-interval", "0", "--log-format", "json",
        ])
        #expect(run.status == 0, "\(run.stderr)")
        let statusLines = run.stderr.split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }.filter { $0["message"] as? String == "status" }
        let last = try #require(statusLines.last, "\(run.stderr)")
        func count(_ key: String) -> Int? { (last[key] as? Int) ?? (last[key] as? String).flatMap(Int.init) }
        let queueStatus = try CommandRunner.run(["queue", "status", queue, "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(queueStatus.stdout.utf8)) as? [String: Any])
        let counts = try #require(object["counts"] as? [String: Int], "\(queueStatus.stdout)")
        #expect(counts["done"] == 2 && counts["failed"] == 1, "\(counts)")
        #expect(count("done") == counts["done"] && count("failed") == counts["failed"], "\(last) against \(counts)")
        #expect(count("cancelled") == 0 && last["discarded"] == nil, "\(last)")
        // The log's line for each job is its outcome, in the same words.
        let outcomes = run.stderr.split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }.filter { $0["source"] != nil }.compactMap { object in (object["source"] as? String).map { ($0, object["message"] as? String ?? "") } }
        let byJob = Dictionary(outcomes, uniquingKeysWith: { $1 })
        #expect(byJob["tiny.png"] == "done" && byJob["notes.txt"] == "skipped" && byJob["broken.jpg"] == "failed", "\(byJob)")
    }

    @Test func commandsThatDoNotApplyToAKindOfQueueSaySo() throws {
        // `retry` is `queue retry`: it takes a PostgreSQL queue through its driver, which says why it cannot reach it.
        let retry = try CommandRunner.run(["retry", "postgres://imagepipe@127.0.0.1:1/app"])
        #expect(retry.status == 2 && retry.stderr.contains("cannot open the queue postgres://imagepipe@127.0.0.1:1/app"), "\(retry)")
        let keep = try CommandRunner.run(["watch", "postgres://imagepipe@127.0.0.1:1/app", "--dest", directory.url("out"), "--keep-done", "1d"])
        #expect(keep.status == 2 && keep.stderr.contains("--keep-done does not apply to a PostgreSQL queue"), "\(keep)")
        // `config` checks it too, as the run would, before anything runs.
        let checked = try CommandRunner.run([
            "config", "watch", "postgres://imagepipe@127.0.0.1:1/app", "--dest", directory.url("out"), "--keep-done", "1d",
        ])
        #expect(checked.status == 2 && checked.stderr.contains("--keep-done does not apply to a PostgreSQL queue"), "\(checked)")
        let prune = try CommandRunner.run(["queue", "prune", "postgres://imagepipe@127.0.0.1:1/app", "--include-failed"])
        #expect(prune.status == 2 && prune.stderr.contains("--include-failed does not apply to a PostgreSQL queue"), "\(prune)")
    }
}
