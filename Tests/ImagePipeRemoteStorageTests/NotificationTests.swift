// --notify-url end to end: the real binary POSTs to a Python receiver that verifies every signature with hmac, answers 500 or hangs on demand.
import Foundation
import ImagePipe
import ImagePipeRemoteStorage
import ImagePipeTestSupport
import Logging
import Testing

/// Job notifications as an application receives them: one per recorded job, signed, retried, and
/// never ahead of the job's record.
@Suite(.offThePool) struct NotificationTests {
    let directory = TemporaryDirectory(prefix: "imagepipe-notify")
    let secret = "whsec-test-7d1f0c"

    /// Two images, a file that is no image, and a damaged JPEG (its first bytes a JPEG's, the rest cut off).
    func makeSources(in folder: String) {
        directory.write(folder + "/a.jpg", Fixtures.data("images/formats/small-200x150.jpg"))
        directory.write(folder + "/b.png", Fixtures.data("images/formats/tiny.png"))
        directory.write(folder + "/notes.txt", Data("not an image at all\n".utf8))
        directory.write(folder + "/broken.jpg", Fixtures.data("hostile/truncated.jpg"))
    }

    func records(_ path: String) throws -> [String: [String: Any]] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let lines = try text.split(separator: "\n").map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
        return Dictionary(uniqueKeysWithValues: lines.map { ($0["source"] as! String, $0) })
    }

    /// A parsed JSON object written back with sorted keys, to compare two parsings of one record.
    func canonical(_ object: [String: Any]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    }

    @Test func hmacSHA256MatchesRFC4231() {
        let big = [UInt8](repeating: 0xaa, count: 131)
        let cases: [(key: [UInt8], data: [UInt8], mac: String)] = [
            ([UInt8](repeating: 0x0b, count: 20), Array("Hi There".utf8), "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
            (Array("Jefe".utf8), Array("what do ya want for nothing?".utf8), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
            (
                [UInt8](repeating: 0xaa, count: 20), [UInt8](repeating: 0xdd, count: 50),
                "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"
            ),
            (Array(1...25), [UInt8](repeating: 0xcd, count: 50), "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"),
            (
                big, Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
                "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
            ),
            (
                big,
                Array(
                    ("This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed "
                        + "before being used by the HMAC algorithm.").utf8),
                "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"
            ),
        ]
        for (number, test) in cases.enumerated() {
            #expect(Digests.hmacSHA256(key: test.key, test.data).hexString == test.mac, "case \(number + 1)")
        }
        // Case 5 checks the first 128 bits only.
        #expect(
            Digests.hmacSHA256(key: [UInt8](repeating: 0x0c, count: 20), Array("Test With Truncation".utf8)).prefix(16).hexString
                == "a3b6167473100ee06e0c796c2955552b")
        // The header signs "TIMESTAMP." and the body: RFC 4231's second case, split at the dot.
        let signature = NotificationSignature(secret: "Jefe")
        #expect(
            signature.header(body: Data(" do ya want for nothing?".utf8), timestamp: 0)
                == "t=0,v1=" + Digests.hmacSHA256(key: Array("Jefe".utf8), Array("0. do ya want for nothing?".utf8)).hexString)
    }

    @Test func aNotifyURLWithoutASecretStopsTheRunBeforeItStartsAndConfigSaysSo() throws {
        let receiver = try NotifyReceiver(secret: secret)
        directory.write("src/a.jpg", Fixtures.data("images/formats/small-200x150.jpg"))
        let arguments = [directory.url("src"), "--dest", directory.url("out"), "--notify-url", receiver.url]
        for command in [["batch"], ["config", "batch"]] {
            let output = try CommandRunner.run(command + arguments, environment: ["HOME": directory.path])
            #expect(output.status == 2, "\(command): \(output.stderr)")
            #expect(output.stderr.contains("--notify-url needs IMAGEPIPE_NOTIFY_SECRET"), "\(output.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: directory.url("out")), "nothing made")
        #expect(try receiver.received().isEmpty)
        // With the secret, config shows where the URL came from, masks the secret and warns of no unknown variable.
        let shown = try CommandRunner.run(
            ["config", "batch", directory.url("src"), "--dest", directory.url("out")],
            environment: ["IMAGEPIPE_NOTIFY_URL": receiver.url, "IMAGEPIPE_NOTIFY_SECRET": secret, "HOME": directory.path])
        #expect(shown.status == 0, "\(shown.stderr)")
        #expect(shown.stdout.contains("notify-url = \"\(receiver.url)\"  # environment variable IMAGEPIPE_NOTIFY_URL"), "\(shown.stdout)")
        #expect(shown.stdout.contains("IMAGEPIPE_NOTIFY_SECRET = \"********\""), "\(shown.stdout)")
        #expect(!shown.stdout.contains(secret) && !shown.stderr.contains(secret))
        #expect(!shown.stderr.contains("IMAGEPIPE_NOTIFY_SECRET"), "not reported as naming no option: \(shown.stderr)")
    }

    @Test func aBatchNotifiesEveryJobOnceWithItsManifestRecord() throws {
        let receiver = try NotifyReceiver(secret: secret)
        makeSources(in: "src")
        let manifest = directory.url("manifest.jsonl")
        // The URL comes from the environment, as every option can.
        let output = try CommandRunner.run(
            ["batch", directory.url("src"), "--dest", directory.url("out"), "--manifest", manifest],
            environment: ["IMAGEPIPE_NOTIFY_URL": receiver.url, "IMAGEPIPE_NOTIFY_SECRET": secret, "HOME": directory.path])
        #expect(output.status == 1, "broken.jpg failed: \(output.stderr)")
        #expect(!output.stderr.contains(secret))

        let recorded = try records(manifest)
        let received = try receiver.received()
        #expect(received.count == 4, "one notification per job: \(received.map(\.job))")
        #expect(Set(received.map(\.job)) == ["a.jpg", "b.png", "notes.txt", "broken.jpg"])
        #expect(Set(received.map(\.id)).count == received.count)
        for notice in received {
            #expect(notice.signatureOK, "\(notice.job): \(notice.signatureProblem)")
            #expect(notice.contentType == "application/json")
            let record = try #require(recorded[notice.job])
            #expect(try canonical(notice.result) == canonical(record), "\(notice.job): the manifest's very record")
            #expect(notice.event == record["status"] as? String)
        }
        #expect(
            Dictionary(uniqueKeysWithValues: received.map { ($0.job, $0.event) }) == [
                "a.jpg": "done", "b.png": "done", "notes.txt": "skipped", "broken.jpg": "failed",
            ])
    }

    @Test func notificationsAreRetriedAfter500sAndATimeout() throws {
        let receiver = try NotifyReceiver(secret: secret, fail: 2, hang: 1, hangSeconds: 20)
        directory.write("src/a.jpg", Fixtures.data("images/formats/small-200x150.jpg"))
        let started = Date()
        let output = try CommandRunner.run(
            [
                "batch", directory.url("src"), "--dest", directory.url("out"), "--manifest", directory.url("manifest.jsonl"),
                "--notify-url", receiver.url, "--notify-timeout", "1s",
            ],
            environment: ["IMAGEPIPE_NOTIFY_SECRET": secret, "HOME": directory.path])
        #expect(output.status == 0, "\(output.stderr)")
        let received = try receiver.received()
        #expect(received.map(\.answer) == ["500", "500", "hang", "200"], "two 500s, a timeout, then delivered")
        #expect(Set(received.map(\.id)).count == 1, "every attempt is the same notification")
        #expect(received.allSatisfy { $0.signatureOK }, "each attempt is signed afresh")
        #expect(output.stderr.components(separatedBy: "notification attempt failed, retrying").count - 1 == 3, "\(output.stderr)")
        // The hung attempt was abandoned after its 1 s, not the receiver's 20 s.
        #expect(Date().timeIntervalSince(started) < 15)
    }

    @Test func aFullNotifierQueueMakesTheNextJobWaitAndLosesNothing() async throws {
        // One sender, room for one notice: the first POST hangs until the 1 s timeout, the second waits
        // in the queue, so the third has no room until the sender takes the second.
        let receiver = try NotifyReceiver(secret: secret, hang: 1, hangSeconds: 20)
        let notifier = try WebhookNotifier(
            configuration: .init(
                url: receiver.url, secret: secret, deadline: .seconds(60), attemptTimeout: .seconds(1), capacity: 1, senders: 1,
                firstDelay: .milliseconds(50)),
            logger: Logger(label: "test"))
        let notice = { (name: String) in JobNotice(event: .done, job: name, result: JobResult(source: name, status: .done)) }
        let start = ContinuousClock.now
        await notifier.send(notice("first"))
        await notifier.send(notice("second"))
        await notifier.send(notice("third"))
        // The third found room only once the first attempt, sent after `start`, timed out (1 s) and
        // the sender took the second; without the bound it would have been queued at once.
        #expect(ContinuousClock.now - start > .milliseconds(900))
        let left = await BlockingIO.run { notifier.finishWaiting(within: .seconds(30)) }
        #expect(left.isEmpty)
        let received = try receiver.received()
        #expect(received.map(\.answer) == ["hang", "200", "200", "200"], "the first retried after its timeout; nothing dropped")
        #expect(received.map(\.job) == ["first", "first", "second", "third"])
    }

    @Test func aQueueDirectoryWorkerNotifiesOnlyRecordedJobs() throws {
        let queue = directory.url("queue")
        let receiver = try NotifyReceiver(secret: secret, queue: queue)
        makeSources(in: "queue/inbox")
        let output = try CommandRunner.run(
            ["watch", queue, "--dest", directory.url("out"), "--exit-when-empty", "--status-interval", "0", "--notify-url", receiver.url],
            environment: ["IMAGEPIPE_NOTIFY_SECRET": secret, "HOME": directory.path])
        #expect(output.status == 0, "\(output.stderr)")
        let received = try receiver.received()
        #expect(received.count == 4, "\(received.map(\.job))")
        #expect(Set(received.map(\.job)) == ["a.jpg", "b.png", "notes.txt", "broken.jpg"], "the queue's job ids: the names")
        for notice in received {
            #expect(notice.signatureOK, "\(notice.job): \(notice.signatureProblem)")
            #expect(notice.recordExisted == true, "\(notice.job): its record was in done/ or failed/ before the POST")
        }
        let done = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: queue + "/done/a.jpg.json"))) as! [String: Any]
        let a = try #require(received.first { $0.job == "a.jpg" })
        #expect(try canonical(a.result) == canonical(done), "done/a.jpg.json's very record")
        #expect(a.event == "done")
        // One word per fate, the word of the folder and of the record's status: a failure for good
        // is `failed` (in failed/), a file that is no image `skipped` (in done/).
        let broken = try #require(received.first { $0.job == "broken.jpg" })
        #expect(broken.event == "failed" && broken.result["status"] as? String == "failed", "\(broken.result)")
        #expect(FileManager.default.fileExists(atPath: queue + "/failed/broken.jpg.error.json"))
        let notes = try #require(received.first { $0.job == "notes.txt" })
        #expect(notes.event == "skipped" && notes.result["status"] as? String == "skipped", "\(notes.result)")
        #expect(FileManager.default.fileExists(atPath: queue + "/done/notes.txt.json"))
    }

    @Test func aReceiverDownPastTheDeadlineLosesNoResultAndRunsNoJobAgain() throws {
        let queue = directory.url("queue")
        let receiver = try NotifyReceiver(secret: secret, fail: 1000)
        directory.write("queue/inbox/a.jpg", Fixtures.data("images/formats/small-200x150.jpg"))
        let output = try CommandRunner.run(
            [
                "watch", queue, "--dest", directory.url("out"), "--exit-when-empty", "--status-interval", "0",
                "--notify-url", receiver.url + "?token=in-the-url", "--notify-deadline", "2s",
            ],
            environment: ["IMAGEPIPE_NOTIFY_SECRET": secret, "HOME": directory.path])
        #expect(output.status == 0, "\(output.stderr)")
        let record = try JSONDecoder().decode(JobResult.self, from: Data(contentsOf: URL(fileURLWithPath: queue + "/done/a.jpg.json")))
        #expect(record.status == .done && record.attempts == 1, "the job ran once, and its result stays recorded")
        let received = try receiver.received()
        #expect(received.count >= 2, "retried before giving up")
        #expect(Set(received.map(\.id)).count == 1)
        #expect(
            TextLog.hasLine(
                output.stderr, "error", "notification failed until its deadline: given up; the job's result is recorded",
                ["job": "a.jpg", "event": "done", "url": receiver.url, "error": "HTTP 500"]), "\(output.stderr)")
        #expect(!output.stderr.contains(secret) && !output.stderr.contains("in-the-url"), "no secret in the log")
    }

    @Test func aStoppedWorkerGivesNotificationsTheRestOfItsShutdownTimeoutAndSaysWhatWasLeft() throws {
        let queue = directory.url("queue")
        let receiver = try NotifyReceiver(secret: secret, fail: 1000)
        directory.write("queue/inbox/a.jpg", Fixtures.data("images/formats/small-200x150.jpg"))
        let worker = try WorkerProcess(
            [
                "watch", queue, "--dest", directory.url("out"), "--status-interval", "0", "--shutdown-timeout", "2",
                "--notify-url", receiver.url, "--notify-deadline", "10m",
            ],
            log: directory.url("worker.log"), environment: ["IMAGEPIPE_NOTIFY_SECRET": secret, "HOME": directory.path])
        #expect(eventually { ((try? receiver.received().count) ?? 0) >= 2 }, "\(worker.log)")
        worker.send(SIGTERM)
        // The 10-minute deadline does not hold the stop: the 2 s shutdown timeout does.
        #expect(worker.waitForExit(seconds: 20) == 0, "\(worker.log)")
        #expect(
            TextLog.hasLine(
                worker.log, "error", "stopping with notifications undelivered; their jobs' results are recorded",
                ["notifications": "1", "url": receiver.url]), "\(worker.log)")
        #expect(FileManager.default.fileExists(atPath: queue + "/done/a.jpg.json"))
    }

    @Test func aWorkerKilledMidRunNeverNotifiedAheadOfARecord() throws {
        let queue = directory.url("queue")
        let receiver = try NotifyReceiver(secret: secret, queue: queue)
        // Enough work (a debug build, one job at a time) that the kill lands while jobs remain.
        let total = 30
        for index in 0..<total { directory.write("queue/inbox/photo\(index).jpg", Fixtures.data("images/formats/landscape.jpg")) }
        let worker = try WorkerProcess(
            ["watch", queue, "--dest", directory.url("out"), "--jobs", "1", "--status-interval", "0", "--notify-url", receiver.url],
            log: directory.url("worker.log"), environment: ["IMAGEPIPE_NOTIFY_SECRET": secret, "HOME": directory.path])
        #expect(eventually { ((try? receiver.received().count) ?? 0) >= 3 }, "\(worker.log)")
        worker.send(SIGKILL)
        _ = worker.waitForExit(seconds: 10)
        let received = try receiver.received()
        #expect(received.count < total, "killed mid-run")
        for notice in received {
            #expect(notice.recordExisted == true, "\(notice.job) was notified before its record was in done/")
            #expect(FileManager.default.fileExists(atPath: queue + "/done/\(notice.job).json"), "\(notice.job)'s record survived the kill")
        }
    }
}
