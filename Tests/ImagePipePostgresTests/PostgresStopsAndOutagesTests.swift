// `imagepipe watch postgres://...` stopped before its queue opened, working off a backlog when a worker dies, and losing its database while idle.
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import ImagePipe
import ImagePipeTestSupport
import Testing

/// Stops, ends and outages of the built binary on real PostgreSQL, with real signals.
@Suite(.offThePool, .serialized, .requires(PostgresServer.tool))
struct PostgresStopsAndOutagesTests {
    /// Starts `imagepipe watch` on `url` with small, quick settings and `extra`.
    func worker(
        _ url: String, _ directory: TemporaryDirectory, _ name: String, _ extra: [String], environment: [String: String]
    ) throws
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

    @Test func aWorkerWorkingOffTheBacklogWaitsForTheJobsOfAKilledWorkerAndDoesThem() async throws {
        let fixture = try PostgresFixture()
        let url = fixture.server.url(database: fixture.database)
        let environment = fixture.server.environment
        // The dying worker's lease outlasts the survivor's start, however loaded the machine.
        let slow = ["--variant", "a=1800x1800,avif,q60", "--lease", "10"]
        func enqueue(_ fixtureName: String, as name: String) async throws {
            let source = fixture.directory.write("src/" + name, Fixtures.data(fixtureName))
            let output = try await offPool { try CommandRunner.run(["enqueue", url, source], environment: environment) }
            #expect(output.status == 0, "\(output.stderr)")
        }
        // The dying worker's job is held in its first stage (its source is read from a server that
        // answers only when told), so it is surely running when the worker is killed.
        let held = try HelperProcess(
            "held_source.py", in: URL(fileURLWithPath: #filePath).deletingLastPathComponent().path + "/Support/python",
            ["--file", Fixtures.root + "/images/exif-orientation/Landscape_1.jpg"])
        let store = environment.merging(
            ["SUPABASE_URL": "http://127.0.0.1:\(held.port)", "SUPABASE_SERVICE_ROLE_KEY": "test-key"]) { $1 }
        let enqueued = try await offPool { try CommandRunner.run(["enqueue", url, "supabase://uploads/big.jpg"], environment: environment) }
        #expect(enqueued.status == 0, "\(enqueued.stderr)")
        let dying = try worker(url, fixture.directory, "dying", slow, environment: store)
        try await offPool { _ = try held.call(["cmd": "wait_request"]) }
        #expect(try fixture.states() == ["running": 1], "\(dying.log)")
        dying.send(SIGKILL)
        #expect(try await offPool { dying.waitForExit(seconds: 10) } == 128 + SIGKILL)
        try await offPool { _ = try held.call(["cmd": "release"]) }
        // Its job stays running under its lease; the backlog a cron job then works off is two more.
        try await enqueue("images/formats/tiny.png", as: "a.png")
        try await enqueue("images/formats/tiny.png", as: "b.png")
        let survivor = try worker(url, fixture.directory, "survivor", slow + ["--exit-when-empty"], environment: store)
        #expect(try await offPool { survivor.waitForExit(seconds: 120) } == 0, "\(survivor.log)")
        #expect(try fixture.states() == ["done": 3], "nothing left undone when it says the queue is empty: \(survivor.log)")
        #expect(try fixture.sql("SELECT attempt, errors->0->>'error_code' FROM imagepipe.jobs WHERE source LIKE '%big.jpg'") == "2|worker_crashed")
        #expect(TextLog.hasLine(survivor.log, "notice", "the queue is empty: stopping", ["queue": url]), "\(survivor.log)")
    }

    @Test func exitWhenEmptyLeavesJobsQueuedForLaterAndSaysSo() async throws {
        let fixture = try PostgresFixture()
        let url = fixture.server.url(database: fixture.database)
        let now = fixture.directory.write("src/now.png", Fixtures.data("images/formats/tiny.png"))
        let later = fixture.directory.write("src/later.png", Fixtures.data("images/formats/tiny.png"))
        let soon = fixture.directory.write("src/soon.png", Fixtures.data("images/formats/tiny.png"))
        for (source, at) in [(now, [String]()), (later, ["--run-at", "+2h"]), (soon, ["--run-at", "+3s"])] {
            let output = try await offPool { try CommandRunner.run(["enqueue", url, source] + at, environment: fixture.server.environment) }
            #expect(output.status == 0, "\(output.stderr)")
        }
        let worker = try worker(
            url, fixture.directory, "backlog", ["--exit-when-empty", "--variant", "t=32x32,jpeg,q70"], environment: fixture.server.environment)
        #expect(try await offPool { worker.waitForExit(seconds: 60) } == 0, "\(worker.log)")
        // Due within a minute (the longest retry backoff) is waited for; two hours from now is not.
        #expect(try fixture.sql("SELECT source, state FROM imagepipe.jobs ORDER BY id") == "\(now)|done\n\(later)|waiting\n\(soon)|done")
        #expect(
            TextLog.hasLine(worker.log, "notice", "no job is due: stopping; jobs queued for later stay waiting", ["queue": url, "later": "1"]),
            "\(worker.log)")
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
        #expect(await fixture.eventually { ready().status == 200 }, "\(worker.log)")

        try await offPool { try server.stop() }
        // The worker only polls: the outage is logged when it happens, not when the worker stops.
        #expect(try await offPool { worker.waitForLog("lost PostgreSQL", seconds: 20) }, "\(worker.log)")
        #expect(TextLog.hasLine(worker.log, "warning", "lost PostgreSQL; reconnecting with backoff, jobs whose leases hold are kept", ["queue": url]))
        var answer = ready()
        #expect(
            await fixture.eventually(seconds: 10) {
                answer = ready()
                return answer.status == 503 && answer.body.contains("queue: lost PostgreSQL")
            }, "\(answer) \(worker.log)")
        #expect(worker.process.isRunning)

        try await offPool { try server.start() }
        #expect(try await offPool { worker.waitForLog("PostgreSQL reachable again", seconds: 30) }, "\(worker.log)")
        #expect(await fixture.eventually(seconds: 15) { ready().status == 200 }, "\(ready())")
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
