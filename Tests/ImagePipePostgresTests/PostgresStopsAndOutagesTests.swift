// `imagepipe watch postgres://...` stopped before its queue opened, working off a backlog when a worker dies, and losing its database while idle.
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import ImagePipe
import ImagePipeTestSupport
import Testing

/// Stops, ends and outages of the built binary on real PostgreSQL, with real signals.
@Suite(.serialized, .requires(PostgresServer.tool))
struct PostgresStopsAndOutagesTests {
    /// Starts `imagepipe watch` on `url` with small, quick settings and `extra`.
    func worker(_ url: String, _ directory: TemporaryDirectory, _ name: String, _ extra: [String], environment: [String: String]) throws
        -> WorkerProcess
    {
        try WorkerProcess(
            ["watch", url, "--dest", directory.url("out"), "--jobs", "1", "--uploads", "1", "--status-interval", "0"] + extra,
            log: directory.url(name + ".log"), environment: environment)
    }

    @Test func aStopWhileTheDatabaseCannotBeReachedEndsAtOnceWithPostgreSQLWording() async throws {
        let directory = TemporaryDirectory(prefix: "imagepipe-pg-stop")
        // Nothing listens there: opening the queue waits and retries, as it does while a database starts.
        let url = "postgres://postgres@127.0.0.1:\(LoopbackHTTP.freePort())/app?queue=images&sslmode=disable"
        for signal in [SIGINT, SIGTERM] {
            let worker = try worker(url, directory, "worker-\(signal)", ["--shutdown-timeout", "30"], environment: ["PGPASSWORD": "x"])
            #expect(try await offPool { worker.waitForLog("cannot reach PostgreSQL yet") }, "\(worker.log)")
            worker.send(signal)
            // Well before the 30 s shutdown timeout, which the wait for the database used to run into.
            let status = try await offPool { worker.waitForExit(seconds: 10) }
            #expect(status == 0, "\(worker.log)")
            let log = worker.log
            #expect(
                TextLog.hasLine(log, "notice", "stopped before the queue was open: no job was claimed", ["queue": url]),
                "\(log)")
            #expect(!log.contains("inbox") && !log.contains("processing/"), "no queue-directory wording: \(log)")
        }
    }
}
