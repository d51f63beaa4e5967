// Notifications a queue directory keeps with its records: a worker killed or stopped with some undelivered leaves them to the next.
import Foundation
import ImagePipe
import ImagePipeRemoteStorage
import ImagePipeTestSupport
import Testing

/// The real binary, a receiver that is down (answers 500) while the first worker runs, and one that
/// takes everything for the second: each notification the first tried arrives, with its own id.
@Suite(.offThePool) struct NotificationOutboxTests {
    let directory = TemporaryDirectory(prefix: "imagepipe-outbox")
    let secret = "whsec-outbox-51c9"
    var environment: [String: String] { ["IMAGEPIPE_NOTIFY_SECRET": secret, "HOME": directory.path] }
    let names = ["a.jpg", "b.jpg", "c.jpg"]

    /// Runs a worker until every job is recorded and the down receiver has seen a notification of
    /// each; returns the worker and those notifications' ids.
    func runUntilEveryJobIsRecorded(_ queue: String, down: NotifyReceiver, extra: [String] = []) throws -> (WorkerProcess, Set<String>) {
        for name in names { directory.write("queue/inbox/" + name, Fixtures.data("images/formats/small-200x150.jpg")) }
        let worker = try WorkerProcess(
            ["watch", queue, "--dest", directory.url("out"), "--status-interval", "0", "--notify-url", down.url, "--notify-deadline", "10m"]
                + extra, log: directory.url("worker.log"), environment: environment)
        #expect(
            eventually {
                names.allSatisfy { FileManager.default.fileExists(atPath: queue + "/done/\($0).json") }
                    && Set(((try? down.received()) ?? []).map(\.job)) == Set(names)
            }, "\(worker.log)")
        return (worker, Set(try down.received().map(\.id)))
    }

    /// The second worker, against a receiver that is up, until the queue is empty.
    func runAgain(_ queue: String, up: NotifyReceiver) throws -> CommandRunner.Output {
        try CommandRunner.run(
            ["watch", queue, "--dest", directory.url("out"), "--exit-when-empty", "--status-interval", "0", "--notify-url", up.url],
            environment: environment)
    }

    @Test func aWorkerKilledWithNotificationsUndeliveredLeavesThemToTheNextWorker() throws {
        let queue = directory.url("queue")
        let down = try NotifyReceiver(secret: secret, fail: 1_000_000)
        let (worker, tried) = try runUntilEveryJobIsRecorded(queue, down: down)
        worker.send(SIGKILL)
        _ = worker.waitForExit(seconds: 10)
        #expect(tried.count == names.count)

        let up = try NotifyReceiver(secret: secret, queue: queue)
        let output = try runAgain(queue, up: up)
        #expect(output.status == 0, "\(output.stderr)")
        let received = try up.received()
        #expect(Set(received.map(\.id)) == tried, "each notification the killed worker could not deliver, under its own id")
        #expect(received.count == names.count, "once each")
        for notice in received {
            #expect(notice.signatureOK, "\(notice.job): \(notice.signatureProblem)")
            #expect(notice.recordExisted == true && notice.event == "done", "\(notice.job)")
        }
        for name in names {
            let record = try JSONDecoder().decode(JobResult.self, from: Data(contentsOf: URL(fileURLWithPath: queue + "/done/\(name).json")))
            #expect(record.attempts == 1, "\(name) ran once: its notification went, not the job again")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: queue + "/processing").isEmpty, "nothing kept any longer")
    }

    @Test func aWorkerStoppedWithNotificationsUndeliveredLeavesThemToTheNextWorker() throws {
        let queue = directory.url("queue")
        let down = try NotifyReceiver(secret: secret, fail: 1_000_000)
        let (worker, tried) = try runUntilEveryJobIsRecorded(queue, down: down, extra: ["--shutdown-timeout", "1"])
        worker.send(SIGTERM)
        #expect(worker.waitForExit(seconds: 20) == 0, "\(worker.log)")
        #expect(
            TextLog.hasLine(
                worker.log, "notice", "the undelivered notifications stay with the queue: the next worker with --notify-url sends them",
                ["notifications": "\(names.count)"]), "\(worker.log)")

        // A worker without --notify-url leaves them alone.
        let silent = try CommandRunner.run(
            ["watch", queue, "--dest", directory.url("out"), "--exit-when-empty", "--status-interval", "0"], environment: environment)
        #expect(silent.status == 0, "\(silent.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: queue + "/processing").count == 1, "the stopped worker's notices wait")

        let up = try NotifyReceiver(secret: secret, queue: queue)
        let output = try runAgain(queue, up: up)
        #expect(output.status == 0, "\(output.stderr)")
        #expect(Set(try up.received().map(\.id)) == tried)
        #expect(try FileManager.default.contentsOfDirectory(atPath: queue + "/processing").isEmpty)
    }

    @Test func aJobRefusedForItsOptionsFileIsNotifiedAsDiscarded() throws {
        let queue = directory.url("queue")
        directory.write("queue/inbox/bad.jpg.options.json", Data("{\"focus\": [1.5, 0.5]}".utf8))
        directory.write("queue/inbox/bad.jpg", Fixtures.data("images/formats/small-200x150.jpg"))
        directory.write("queue/inbox/good.jpg", Fixtures.data("images/formats/small-200x150.jpg"))
        let up = try NotifyReceiver(secret: secret, queue: queue)
        let output = try runAgain(queue, up: up)
        #expect(output.status == 0, "\(output.stderr)")
        let received = try up.received()
        #expect(received.map(\.job).sorted() == ["bad.jpg", "good.jpg"], "the refused job too, though the loop never ran it")
        let bad = try #require(received.first { $0.job == "bad.jpg" })
        #expect(bad.event == "failed" && bad.recordExisted == true && bad.signatureOK)
        #expect(bad.result["error_code"] as? String == "invalid_job_options", "\(bad.result)")
    }

    /// A receiver so slow that the notifier's queue (256) is full makes finished jobs wait for room;
    /// a stop past --shutdown-timeout lets them go (it used to outlast the service group's
    /// cancellation and crash the worker), and every notice stays kept for the next worker.
    @Test func aStopWhileJobsWaitForRoomInTheNotifierEndsCleanlyAndKeepsEveryNotice() throws {
        let queue = directory.url("queue")
        let down = try NotifyReceiver(secret: secret, fail: 1_000_000)
        let tiny = Fixtures.data("images/formats/tiny.png")
        for index in 0..<400 { directory.write(String(format: "queue/inbox/%03d.png", index), tiny) }
        let worker = try WorkerProcess(
            [
                "watch", queue, "--dest", directory.url("out"), "--status-interval", "0", "--shutdown-timeout", "2",
                "--notify-url", down.url, "--log-level", "notice",
            ], log: directory.url("worker.log"), environment: environment)
        func records() -> Int {
            ((try? FileManager.default.contentsOfDirectory(atPath: queue + "/done")) ?? []).filter { $0.hasSuffix(".json") }.count
        }
        // 256 waiting and 4 being sent fill the notifier: beyond 260 recorded, jobs wait for room.
        #expect(eventually(seconds: 120) { records() >= 265 }, "\(worker.log.suffix(2000))")
        worker.send(SIGTERM)
        #expect(worker.waitForExit(seconds: 60) == 0, "\(worker.log.suffix(3000))")
        let recorded = records()
        #expect(
            TextLog.hasLine(
                worker.log, "notice", "the undelivered notifications stay with the queue: the next worker with --notify-url sends them",
                ["notifications": "\(recorded)"]), "\(worker.log.suffix(2000))")

        let up = try NotifyReceiver(secret: secret, queue: queue)
        let output = try runAgain(queue, up: up)
        #expect(output.status == 0, "\(output.stderr.suffix(2000))")
        let received = try up.received()
        #expect(received.count == 400 && Set(received.map(\.id)).count == 400, "the \(recorded) kept, and the rest as they were done")
        #expect(received.allSatisfy { $0.recordExisted == true })
    }

    /// A batch keeps no notices (running it again sends them): interrupted while its receiver is
    /// down, it finishes the images in flight and gives the notifications a short while, not the
    /// 10-minute deadline each.
    @Test func anInterruptedBatchGivesItsNotificationsAShortWhileNotTheirDeadline() throws {
        let down = try NotifyReceiver(secret: secret, fail: 1_000_000)
        let tiny = Fixtures.data("images/formats/tiny.png")
        for index in 0..<400 { directory.write(String(format: "src/%03d.png", index), tiny) }
        let batch = try WorkerProcess(
            ["batch", directory.url("src"), "--dest", directory.url("out"), "--notify-url", down.url, "--notify-deadline", "10m"],
            log: directory.url("batch.log"), environment: environment)
        #expect(eventually { ((try? down.received().count) ?? 0) >= 8 }, "\(batch.log.suffix(2000))")
        batch.send(SIGTERM)
        #expect(batch.waitForExit(seconds: 90) == 130, "interrupted, and done within the grace: \(batch.log.suffix(2000))")
        #expect(batch.log.contains("notification failed until its deadline: given up"), "\(batch.log.suffix(2000))")
    }
}
