// --notify-url on a PostgreSQL queue: the real binary, real PostgreSQL, and the Python receiver that checks signatures with hmac.
import Foundation
import ImagePipe
import ImagePipeTestSupport
import Testing

/// A PostgreSQL worker notifies each job once its row holds the result: the job id is the row's id,
/// and the record is the row's result.
@Suite(.offThePool, .serialized, .requires(PostgresServer.tool))
struct PostgresNotificationTests {
    @Test func eachJobIsNotifiedWithItsRowsIdAndResult() async throws {
        let fixture = try PostgresFixture()
        let secret = "whsec-postgres-4e2a"
        // The receiver lives with the storage tests' helpers; it runs the same here.
        let scripts =
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().path
            + "/ImagePipeRemoteStorageTests/Support/python"
        let receiver = try HelperProcess("notify_receiver.py", in: scripts, ["--secret", secret])
        let good = fixture.directory.write("src/a.jpg", Fixtures.data("images/formats/small-200x150.jpg"))
        let bad = fixture.directory.write("src/broken.jpg", Fixtures.data("hostile/truncated.jpg"))
        let url = fixture.server.url(database: fixture.database)
        let environment = fixture.server.environment
        let enqueued = try await offPool {
            try CommandRunner.run(["enqueue", url, "-"], environment: environment, input: Data([good, bad].joined(separator: "\n").utf8))
        }
        #expect(enqueued.status == 0, "\(enqueued.stderr)")

        let worker = try WorkerProcess(
            [
                "watch", url, "--dest", fixture.directory.url("out"), "--jobs", "1", "--status-interval", "0", "--exit-when-empty",
                "--notify-url", "http://127.0.0.1:\(receiver.port)/hooks",
            ],
            log: fixture.directory.url("worker.log"), environment: environment.merging(["IMAGEPIPE_NOTIFY_SECRET": secret]) { $1 })
        #expect(try await offPool { worker.waitForExit(seconds: 120) } == 0, "\(worker.log.suffix(2000))")

        let state = LoopbackHTTP.get("http://127.0.0.1:\(receiver.port)/_receiver/state")
        let object = try JSONSerialization.jsonObject(with: Data(state.body.utf8)) as? [String: Any]
        let received = object?["requests"] as? [[String: Any]] ?? []
        #expect(received.count == 2, "one per job: \(state)")
        for request in received {
            #expect(request["signature_ok"] as? Bool == true, "\(request)")
            let body = try #require(request["body"] as? [String: Any])
            let job = try #require(body["job"] as? String)
            let result = try #require(body["result"] as? [String: Any])
            // The row the notification names holds this very result.
            let row = try fixture.sql("SELECT state || '|' || result::text FROM imagepipe.jobs WHERE id = \(Int(job) ?? -1)")
            let parts = row.split(separator: "|", maxSplits: 1).map(String.init)
            #expect(parts.count == 2, "job \(job): \(row)")
            let stored = try JSONSerialization.jsonObject(with: Data((parts.last ?? "").utf8)) as? [String: Any] ?? [:]
            #expect(stored["source"] as? String == result["source"] as? String && stored["status"] as? String == result["status"] as? String)
            #expect(stored["sha256"] as? String == result["sha256"] as? String)
            // The event is the row's state: done, or failed for the failure it will not retry.
            #expect(body["event"] as? String == parts.first, "\(body)")
            #expect(parts.first == ((result["source"] as? String ?? "").hasSuffix("a.jpg") ? "done" : "failed"), "\(row)")
        }
    }

    /// The receiver's POSTs so far.
    private func received(_ receiver: HelperProcess) throws -> [[String: Any]] {
        let state = LoopbackHTTP.get("http://127.0.0.1:\(receiver.port)/_receiver/state")
        let object = try JSONSerialization.jsonObject(with: Data(state.body.utf8)) as? [String: Any]
        return object?["requests"] as? [[String: Any]] ?? []
    }

    private func ids(_ requests: [[String: Any]]) -> Set<String> {
        Set(requests.compactMap { ($0["body"] as? [String: Any])?["id"] as? String })
    }

    /// A worker killed while its receiver is down leaves its notices in the table with the results;
    /// another worker takes them over once their hold (a lease) is not renewed, and delivers each
    /// under the id the first one tried, without running any job again.
    @Test func aKilledWorkersNotificationsAreTakenOverALeaseLaterByAnother() async throws {
        let fixture = try PostgresFixture()
        let secret = "whsec-postgres-outbox-93d0"
        let scripts =
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().path
            + "/ImagePipeRemoteStorageTests/Support/python"
        let down = try HelperProcess("notify_receiver.py", in: scripts, ["--secret", secret, "--fail", "1000000"])
        let up = try HelperProcess("notify_receiver.py", in: scripts, ["--secret", secret])
        // Three done and one failed: the notices of both settling statements are kept.
        let sources =
            (1...3).map { fixture.directory.write("src/\($0).jpg", Fixtures.data("images/formats/small-200x150.jpg")) }
            + [fixture.directory.write("src/broken.jpg", Fixtures.data("hostile/truncated.jpg"))]
        let url = fixture.server.url(database: fixture.database)
        let environment = fixture.server.environment.merging(["IMAGEPIPE_NOTIFY_SECRET": secret]) { $1 }
        let enqueued = try await offPool {
            try CommandRunner.run(["enqueue", url, "-"], environment: environment, input: Data(sources.joined(separator: "\n").utf8))
        }
        #expect(enqueued.status == 0, "\(enqueued.stderr)")
        func worker(_ receiver: HelperProcess, _ log: String) throws -> WorkerProcess {
            try WorkerProcess(
                [
                    "watch", url, "--dest", fixture.directory.url("out"), "--lease", "3", "--status-interval", "0",
                    "--notify-url", "http://127.0.0.1:\(receiver.port)/hooks", "--notify-deadline", "10m",
                ], log: fixture.directory.url(log), environment: environment)
        }

        let first = try worker(down, "first.log")
        #expect(
            try await offPool {
                eventually {
                    (try? fixture.sql("SELECT count(*) FROM imagepipe.jobs WHERE state IN ('done', 'failed')")) == "4"
                        && self.ids((try? self.received(down)) ?? []).count == 4
                }
            }, "\(first.log.suffix(2000))")
        first.send(SIGKILL)
        _ = try await offPool { first.waitForExit(seconds: 10) }
        let tried = ids(try received(down))
        #expect(try fixture.sql("SELECT count(*) FROM imagepipe.notices") == "4", "kept with the results")

        let second = try worker(up, "second.log")
        #expect(
            try await offPool { eventually { self.ids((try? self.received(up)) ?? []) == tried } },
            "\(second.log.suffix(2000))")
        #expect(
            try await offPool { eventually { (try? fixture.sql("SELECT count(*) FROM imagepipe.notices")) == "0" } },
            "forgotten once delivered")
        second.send(SIGTERM)
        #expect(try await offPool { second.waitForExit(seconds: 30) } == 0, "\(second.log.suffix(2000))")
        for request in try received(up) { #expect(request["signature_ok"] as? Bool == true, "\(request)") }
        let events = try received(up).compactMap { ($0["body"] as? [String: Any])?["event"] as? String }.sorted()
        #expect(events == ["done", "done", "done", "failed"], "once each")
        #expect(try fixture.sql("SELECT string_agg(attempt::text, ',') FROM imagepipe.jobs") == "1,1,1,1", "no job ran again")
    }

    /// The reproduction: `--lease 3 --max-attempts 2`, a worker killed with SIGKILL in the
    /// middle of the job twice. The next worker fails it `worker_crashed`, as a queue directory
    /// does, and the receiver gets exactly one notification for it (it once got none, and the job
    /// ended silently).
    @Test func aJobWorkersDieHoldingIsFailedWorkerCrashedAndNotifiedOnce() async throws {
        let fixture = try PostgresFixture()
        let secret = "whsec-postgres-deaths-51c7"
        let scripts =
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().path
            + "/ImagePipeRemoteStorageTests/Support/python"
        let receiver = try HelperProcess("notify_receiver.py", in: scripts, ["--secret", secret])
        let source = fixture.directory.write("src/deadly.jpg", Fixtures.data("images/exif-orientation/Landscape_1.jpg"))
        let url = fixture.server.url(database: fixture.database)
        let environment = fixture.server.environment.merging(["IMAGEPIPE_NOTIFY_SECRET": secret]) { $1 }
        let enqueued = try await offPool { try CommandRunner.run(["enqueue", url, source], environment: environment) }
        #expect(enqueued.status == 0, "\(enqueued.stderr)")
        func worker(_ log: String, _ extra: [String] = []) throws -> WorkerProcess {
            try WorkerProcess(
                [
                    "watch", url, "--dest", fixture.directory.url("out"), "--jobs", "1", "--lease", "3", "--max-attempts", "2",
                    "--status-interval", "0", "--log-level", "debug", "--notify-url", "http://127.0.0.1:\(receiver.port)/hooks",
                    // Slow enough (seconds) that the kill lands while the job runs.
                    "--variant", "a=1800x1800,avif,q60,effort=5",
                ] + extra, log: fixture.directory.url(log), environment: environment)
        }
        for death in 1...2 {
            let dying = try worker("dying-\(death).log")
            #expect(try await offPool { dying.waitForLog("claimed") }, "\(dying.log.suffix(2000))")
            dying.send(SIGKILL)
            #expect(try await offPool { dying.waitForExit(seconds: 10) } == 128 + SIGKILL)
            #expect(try fixture.sql("SELECT state, attempt FROM imagepipe.jobs") == "running|\(death)")
        }
        let last = try worker("last.log", ["--exit-when-empty"])
        #expect(try await offPool { last.waitForExit(seconds: 120) } == 0, "\(last.log.suffix(3000))")
        #expect(try fixture.sql("SELECT state, attempt, result->>'error_code' FROM imagepipe.jobs") == "failed|2|worker_crashed")
        #expect(
            try fixture.sql("SELECT string_agg(e->>'error_code', ',') FROM imagepipe.jobs, jsonb_array_elements(errors) AS e")
                == "worker_crashed,worker_crashed", "each death an attempt of its history")
        let requests = try received(receiver)
        #expect(requests.count == 1, "told exactly once: \(requests)\n\(last.log.suffix(4000))")
        let body = try #require(requests.first?["body"] as? [String: Any])
        let result = try #require(body["result"] as? [String: Any])
        #expect(body["event"] as? String == "failed" && result["error_code"] as? String == "worker_crashed", "\(body)")
        #expect(requests.first?["signature_ok"] as? Bool == true)
        #expect(try fixture.sql("SELECT count(*) FROM imagepipe.notices") == "0", "forgotten once delivered")
    }
}
