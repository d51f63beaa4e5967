// `imagepipe watch DIR` when its workers keep dying with the same job: counted across their deaths, set aside at --max-attempts.
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import ImagePipe
import ImagePipeQueue
import ImagePipeTestSupport
import Testing

/// Workers of the real binary killed with `kill -9` while they hold a job, and stopped with SIGTERM.
///
/// A worker is made to hold its job as long as the test needs: it stores into an S3 endpoint of its
/// own that answers the start-up probe and never answers again (``Blackhole``), so the job is in its
/// claim area, being stored, until the worker is killed. Each worker gets its own endpoint, as the
/// probe of the next would otherwise go unanswered.
@Suite(.offThePool, .serialized) struct WorkerCrashTests {
    let directory = TemporaryDirectory(prefix: "imagepipe-crashes")
    var queue: String { directory.url("queue") }

    func files(_ sub: String) -> [String] { directory.files(under: "queue/" + sub).filter { !$0.hasSuffix("/.lock") && $0 != ".lock" } }

    /// Starts a worker that takes `stuck.png` and holds it, storing it into a store that never answers,
    /// and waits until it does: the job in its claim area, its upload under way.
    func startHolding(_ extra: [String], log: String) throws -> (WorkerProcess, Blackhole) {
        let blackhole = try Blackhole()
        let worker = try WorkerProcess(
            [
                "watch", queue, "--dest", "s3://bucket/media", "--endpoint", "http://127.0.0.1:\(blackhole.port)",
                "--region", "us-east-1", "--jobs", "1", "--status-interval", "0", "--log-level", "debug",
            ] + extra,
            log: directory.url(log), environment: ["AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "HOME": directory.path])
        #expect(worker.waitForLog("watching"), "\(worker.log)")
        #expect(
            eventually { blackhole.connections > 0 && files("processing").contains { $0.hasSuffix("/stuck.png") } },
            "\(files("inbox")) \(files("processing")) \(files("failed"))\n\(worker.log)")
        return (worker, blackhole)
    }

    /// A worker on a local destination that works off what it finds and exits.
    func workOff(_ extra: [String], log: String) throws -> WorkerProcess {
        let worker = try WorkerProcess(
            ["watch", queue, "--dest", directory.url("out"), "--jobs", "1", "--status-interval", "0", "--exit-when-empty"] + extra,
            log: directory.url(log))
        #expect(worker.waitForExit(seconds: 60) == 0, "\(worker.log)")
        return worker
    }

    func deliverStuckJob() throws {
        try FileManager.default.createDirectory(atPath: queue + "/inbox", withIntermediateDirectories: true)
        InboxDelivery.deliver(Fixtures.data("images/formats/tiny.png"), to: queue + "/inbox", as: "stuck.png")
    }

    @Test func aJobThreeWorkersDiedHoldingIsSetAsideAsWorkerCrashedAndShownByQueueStatus() throws {
        try deliverStuckJob()
        var areas: [String] = []
        for round in 1...3 {
            let (worker, blackhole) = try startHolding(["--max-attempts", "3"], log: "killed-\(round).log")
            let held = files("processing").filter { $0.hasSuffix("/stuck.png") }
            #expect(held.count == 1, "one worker holds it: \(held)")
            areas += held.map { String($0.dropLast("/stuck.png".count)) }
            worker.send(SIGKILL)
            #expect(worker.waitForExit(seconds: 10) == 137)
            withExtendedLifetime(blackhole) {}
            if round > 1 {
                #expect(worker.log.contains("claimed a job that workers died holding"), "\(worker.log)")
            }
        }
        #expect(Set(areas).count == 3, "three workers, each killed holding the same job: \(areas)")

        let next = try workOff(["--max-attempts", "3", "--log-level", "debug"], log: "next.log")
        #expect(files("failed") == ["stuck.png", "stuck.png.error.json"], "\(files("failed"))\n\(next.log)")
        #expect(files("inbox").isEmpty && files("processing").isEmpty && files("done").isEmpty, "never given to another worker")
        #expect(!next.log.contains("claimed source=stuck.png"), "\(next.log)")
        #expect(next.log.contains("set aside in failed/: workers died holding this job"), "\(next.log)")
        let record = try JSONDecoder().decode(
            FailureRecord.self, from: Data(contentsOf: URL(fileURLWithPath: queue + "/failed/stuck.png.error.json")))
        #expect(record.errorCode == .workerCrashed && record.attempts == 3)
        #expect(record.error.hasPrefix("3 workers died holding this job, the last \(areas[2]) (--max-attempts 3)"), "\(record.error)")
        #expect(record.history.map(\.error) == areas.map { "the worker \($0) died holding the job" })

        let status = try CommandRunner.run(["queue", "status", queue])
        #expect(status.status == 0)
        #expect(status.stdout.contains("failed\t1\n"), "\(status.stdout)")
        let line = try #require(status.stdout.split(separator: "\n").first { $0.hasPrefix("stuck.png\tfailed\t") }, "\(status.stdout)")
        #expect(line.hasSuffix("\tafter 3 attempts, worker_crashed: \(record.error)"), "\(line)")

        // Sent back, it starts again with nothing counted.
        #expect(try CommandRunner.run(["retry", queue]).stdout == "failed/stuck.png -> inbox/stuck.png\n")
        let (worker, blackhole) = try startHolding(["--max-attempts", "3"], log: "after-retry.log")
        #expect(!worker.log.contains("claimed a job that workers died holding"), "\(worker.log)")
        worker.send(SIGKILL)
        #expect(worker.waitForExit(seconds: 10) == 137)
        withExtendedLifetime(blackhole) {}
    }

    @Test func aWorkerStoppedWithSIGTERMGivesTheJobBackWithoutCountingACrash() throws {
        try deliverStuckJob()
        // Two stops, then one worker killed: with --max-attempts 2, the job is set aside only if a stop counted.
        for round in 1...2 {
            let (worker, blackhole) = try startHolding(["--max-attempts", "2", "--shutdown-timeout", "1"], log: "stopped-\(round).log")
            worker.send(SIGTERM)
            #expect(worker.waitForExit(seconds: 30) == 0, "\(worker.log)")
            #expect(worker.log.contains("shutdown timeout: returned the unfinished jobs"), "\(worker.log)")
            #expect(files("inbox") == ["stuck.png"] && files("processing").isEmpty)
            withExtendedLifetime(blackhole) {}
        }
        #expect(!FileManager.default.fileExists(atPath: queue + "/.attempts") || files(".attempts").isEmpty, "nothing counted")
        let (killed, blackhole) = try startHolding(["--max-attempts", "2"], log: "killed.log")
        killed.send(SIGKILL)
        #expect(killed.waitForExit(seconds: 10) == 137)
        withExtendedLifetime(blackhole) {}

        let next = try workOff(["--max-attempts", "2"], log: "next.log")
        #expect(files("done") == ["stuck.png", "stuck.png.json"], "one crash of the two allowed: done, not set aside\n\(next.log)")
        #expect(files("failed").isEmpty && files("inbox").isEmpty && files("processing").isEmpty)
        #expect(files(".attempts").isEmpty, "its tally went with its record")
    }
}
