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

    @Test func anIdleWorkerLogsTheLostDatabaseWhenItGoesAndWhenItComesBackAndIsNotReadyMeanwhile() async throws {
        let server = try PostgresServer()
        let fixture = try PostgresFixture(server: server)
        let url = server.url(database: fixture.database)
        let worker = try worker(
            url, fixture.directory, "idle", ["--metrics-address", "127.0.0.1:0", "--check-interval", "1", "--variant", "t=32x32,jpeg,q70"],
            environment: server.environment)
        let address = try #require(try await offPool { worker.monitoringAddress() }, "\(worker.log)")
        let ready = { LoopbackHTTP.get("http://\(address)/readyz") }
        #expect(try await fixture.eventually { ready().status == 200 }, "\(worker.log)")

        try await offPool { try server.stop() }
        // The worker only polls: the outage is logged when it happens, not when the worker stops.
        #expect(try await offPool { worker.waitForLog("lost PostgreSQL", seconds: 20) }, "\(worker.log)")
        #expect(TextLog.hasLine(worker.log, "warning", "lost PostgreSQL; reconnecting with backoff, jobs whose leases hold are kept", ["queue": url]))
        var answer = ready()
        #expect(try await fixture.eventually(seconds: 10) {
            answer = ready()
            return answer.status == 503 && answer.body.contains("queue: lost PostgreSQL")
        }, "\(answer) \(worker.log)")
        #expect(worker.process.isRunning)

        try await offPool { try server.start() }
        #expect(try await offPool { worker.waitForLog("PostgreSQL reachable again", seconds: 30) }, "\(worker.log)")
        #expect(try await fixture.eventually(seconds: 15) { ready().status == 200 }, "\(ready())")
        // And it works again: a job queued now is done.
        let source = fixture.directory.write("src/photo.png", Fixtures.data("images/formats/tiny.png"))
        let enqueue = try await offPool { try CommandRunner.run(["enqueue", url, source], environment: server.environment) }
        #expect(enqueue.status == 0, "\(enqueue.stderr)")
        #expect(try await fixture.eventually { try fixture.states() == ["done": 1] }, "\(worker.log)")
        worker.send(SIGTERM)
        #expect(try await offPool { worker.waitForExit(seconds: 30) } == 0, "\(worker.log)")
        let lost = worker.log.split(separator: "\n").count { $0.contains(" warning lost PostgreSQL;") }
        #expect(lost == 1, "one line for one outage: \(worker.log)")
    }

    @Test func aServerShuttingDownIsSeenWhileTheWorkersOwnConnectionsStillAnswer() async throws {
        let server = try PostgresServer()
        let fixture = try PostgresFixture(server: server)
        let url = server.url(database: fixture.database)
        // No monitoring: the worker's own upkeep (every half lease) tries a fresh connection.
        let worker = try worker(url, fixture.directory, "smart", ["--lease", "4", "--variant", "t=32x32,jpeg,q70"], environment: server.environment)
        #expect(try await offPool { worker.waitForLog("watching") }, "\(worker.log)")
        // A smart shutdown (docker stop, pg_ctl's old default) refuses new connections and waits
        // for the open ones to close; the worker's pooled connections go on answering its polls.
        try await offPool { try server.stopSmart() }
        #expect(try await offPool { worker.waitForLog("lost PostgreSQL", seconds: 20) }, "\(worker.log)")
        #expect(worker.log.contains("shutting down"), "the reason is the server's: \(worker.log)")
        #expect(worker.process.isRunning)
        worker.send(SIGTERM)
        #expect(try await offPool { worker.waitForExit(seconds: 30) } == 0, "\(worker.log)")
        // Once the worker has let go, the server finishes its shutdown.
        try await offPool { try server.waitUntilStopped() }
    }
}
