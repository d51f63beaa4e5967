// --notify-url on a PostgreSQL queue: the real binary, real PostgreSQL, and the Python receiver that checks signatures with hmac.
import Foundation
import ImagePipe
import ImagePipeTestSupport
import Testing

/// A PostgreSQL worker notifies each job once its row holds the result: the job id is the row's id,
/// and the record is the row's result.
@Suite(.serialized, .requires(PostgresServer.tool))
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
        let bad = fixture.directory.write("src/broken.jpg", Data("this promises a JPEG and is none\n".utf8))
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
            // The event is the row's state: done, or discarded for the failure it will not retry.
            #expect(body["event"] as? String == parts.first, "\(body)")
            #expect(parts.first == ((result["source"] as? String ?? "").hasSuffix("a.jpg") ? "done" : "discarded"), "\(row)")
        }
    }
}
