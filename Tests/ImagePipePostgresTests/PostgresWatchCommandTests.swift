import Foundation
#if canImport(Glibc)
import Glibc
#endif
import ImagePipe
@testable import ImagePipePostgres
import ImagePipeTestSupport
import Testing

/// `imagepipe watch postgres://...` end to end: the built binary, real PostgreSQL, real signals.
@Suite(.offThePool, .serialized, .requires(PostgresServer.tool))
struct PostgresWatchCommandTests {
    static let fixtures = Fixtures.root
    static let smallVariant = ["--variant", "t=32x32,jpeg,q70"]

    /// Starts a worker on the fixture's queue.
    func worker(
        _ fixture: PostgresFixture, _ name: String, _ extra: [String] = [], url: String? = nil, environment: [String: String] = [:]
    ) throws -> WorkerProcess {
        try WorkerProcess(
            [
                "watch", url ?? fixture.server.url(database: fixture.database), "--dest", fixture.directory.url("out"),
                "--jobs", "1", "--uploads", "2", "--status-interval", "0", "--lease", "2", "--shutdown-timeout", "5",
            ] + extra,
            log: fixture.directory.url(name + ".log"), environment: fixture.server.environment.merging(environment) { $1 })
    }

    /// Copies `fixture` under `count` names and queues them with `imagepipe enqueue -`; returns the paths.
    @discardableResult
    func enqueueCopies(of image: String, count: Int, startingAt first: Int = 0, into fixture: PostgresFixture) async throws -> [String] {
        let bytes = try Data(contentsOf: URL(fileURLWithPath: Self.fixtures + "/" + image))
        let ext = (image as NSString).pathExtension
        let paths = (first..<first + count).map { fixture.directory.write(String(format: "src/img-%05d.%@", $0, ext), bytes) }
        let (url, environment) = (fixture.server.url(database: fixture.database), fixture.server.environment)
        let output = try await offPool {
            try CommandRunner.run(["enqueue", url, "-"], environment: environment, input: Data(paths.joined(separator: "\n").utf8))
        }
        #expect(output.status == 0 && output.stdout.split(separator: "\n").count == count, "\(output.stderr)")
        return paths
    }

    /// Every output of the done jobs exists and libvips decodes it.
    func expectOutputsDecode(_ fixture: PostgresFixture, count: Int) async throws {
        let keys = try fixture.sql("SELECT v->>'key' FROM imagepipe.jobs, jsonb_array_elements(result->'variants') v WHERE state = 'done'")
            .split(separator: "\n").map { fixture.directory.url("out/" + $0) }
        #expect(keys.count == count)
        let header = try await offPool { try CommandRunner.run(executable: "/usr/bin/vipsheader", keys) }
        #expect(header.status == 0 && header.stdout.split(separator: "\n").count == count, "\(header.stderr.prefix(500))")
    }

    @Test func fourWorkersWithOneKilledAndRestartedFinishEveryJobOnce() async throws {
        let fixture = try PostgresFixture()
        // The jobs are queued in four parts, the next one only after a kill: each kill finds work
        // left for the others to take over, however fast the workers get through a part between two
        // looks (on a loaded machine a look can take long enough for a whole part to be done).
        var enqueued = try await enqueueCopies(of: "images/formats/tiny.png", count: 500, into: fixture).count
        let listener = try await DoneListener(fixture.location)
        var workers = try (0..<4).map { try worker(fixture, "worker-\($0)", Self.smallVariant) }
        var kills = 0
        var finished = false
        let deadline = ContinuousClock.now + .seconds(300)
        while ContinuousClock.now < deadline {
            let states = try fixture.states()
            if enqueued == 2000, states["waiting", default: 0] + states["running", default: 0] == 0 {
                finished = true
                break
            }
            // Each time another 150 jobs are done, the first worker dies (mid-work, unless the part
            // is already done) and a new one takes its place: by progress, not by time.
            if kills < 3, states["done", default: 0] >= (kills + 1) * 150 {
                workers[0].send(SIGKILL)
                workers[0] = try worker(fixture, "worker-0-\(kills)", Self.smallVariant)
                kills += 1
                enqueued += try await enqueueCopies(of: "images/formats/tiny.png", count: 500, startingAt: enqueued, into: fixture).count
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(finished, "\((try? fixture.states()) ?? [:])")
        for worker in workers {
            // A worker started a moment ago (the last replacement) may not have set up its signal
            // handling yet; SIGTERM would then end it the default way.
            #expect(try await offPool { worker.waitForLog("watching") }, "\(worker.log.suffix(2000))")
            worker.send(SIGTERM)
            #expect(try await offPool { worker.waitForExit(seconds: 30) } == 0, "\(worker.log.suffix(2000))")
        }
        let states = try fixture.states()
        #expect(
            states["done", default: 0] + states["failed", default: 0] == 2000 && states["waiting"] == nil && states["running"] == nil,
            "\(states)")
        #expect(kills == 3, "the test killed a worker mid-run")
        let done = Set(try fixture.sql("SELECT id FROM imagepipe.jobs WHERE state = 'done'").split(separator: "\n").compactMap { Int($0) })
        #expect(await fixture.eventually { Set(listener.notified).isSuperset(of: done) })
        let notified = listener.notified
        #expect(notified.count == Set(notified).count, "no job's result was recorded twice")
        try await expectOutputsDecode(fixture, count: states["done", default: 0])
    }

    @Test func aWorkerStoppedPastItsLeaseLosesTheJobAndItsLateResultIsRefused() async throws {
        let fixture = try PostgresFixture()
        // The job is held in its first stage (its source is read from a server that answers only
        // when told), so the worker is surely stopped in the middle of it, however fast the machine.
        let held = try HelperProcess(
            "held_source.py", in: URL(fileURLWithPath: #filePath).deletingLastPathComponent().path + "/Support/python",
            ["--file", Self.fixtures + "/images/exif-orientation/Landscape_1.jpg"])
        let store = ["SUPABASE_URL": "http://127.0.0.1:\(held.port)", "SUPABASE_SERVICE_ROLE_KEY": "test-key"]
        let url = fixture.server.url(database: fixture.database)
        let enqueued = try await offPool {
            try CommandRunner.run(["enqueue", url, "supabase://uploads/big.jpg"], environment: fixture.server.environment)
        }
        #expect(enqueued.status == 0, "\(enqueued.stderr)")
        let listener = try await DoneListener(fixture.location)
        let slow = ["--variant", "a=1800x1800,avif,q60", "--log-level", "debug"]
        let stopped = try worker(fixture, "stopped", slow, environment: store)
        try await offPool { _ = try held.call(["cmd": "wait_request"]) }
        stopped.send(SIGSTOP)
        #expect(try fixture.sql("SELECT state FROM imagepipe.jobs") == "running")
        // Stopped, it renews nothing: its lease runs out.
        #expect(try await fixture.eventually { try fixture.sql("SELECT lease_expires_at < now() FROM imagepipe.jobs") == "t" })
        // Every read goes on from now: the stopped worker's answer waits for it in its socket.
        try await offPool { _ = try held.call(["cmd": "release"]) }
        let other = try worker(fixture, "other", slow, environment: store)
        #expect(try await fixture.eventually { try fixture.states() == ["done": 1] }, "\(other.log)")
        stopped.send(SIGCONT)
        #expect(try await offPool { stopped.waitForLog("lease lost") }, "\(stopped.log)")
        #expect(stopped.log.contains("result is dropped"))
        #expect(try fixture.sql("SELECT attempt, errors->0->>'error_code', result->>'attempts' FROM imagepipe.jobs") == "2|worker_crashed|2")
        let notified = try await listener.notifiedSoFar(fixture)
        #expect(notified.count == 1, "the job is counted once: \(notified)")
        for worker in [stopped, other] {
            worker.send(SIGTERM)
            #expect(try await offPool { worker.waitForExit(seconds: 30) } == 0)
        }
    }

    /// Two hosts: a worker in a network namespace of its own reaches PostgreSQL over a veth link,
    /// which is cut in the middle of its job, as a failed switch or a partition would.
    @Test(.requiresRoot("make a network namespace"), .requires(.ip))
    func aWorkerCutOffFromTheDatabaseLosesItsJobToAnotherHostAndItsResultIsRefused() async throws {
        let host = try NetworkNamespace()
        let server = try PostgresServer(listen: host.hostAddress)
        let fixture = try PostgresFixture(server: server)
        try await enqueueCopies(of: "images/exif-orientation/Landscape_1.jpg", count: 1, into: fixture)
        let listener = try await DoneListener(fixture.location)
        // Slow enough (about 2 s on two cores, effort 2 took 0.4 s) that the remote worker is still
        // working when the test, seeing its claim, cuts it off: on a loaded machine it once finished first.
        let slow = ["--variant", "a=1800x1800,avif,q60,effort=5", "--log-level", "debug"]
        let remote = try WorkerProcess(
            [
                "watch", server.url(database: fixture.database, host: host.hostAddress), "--dest", fixture.directory.url("out"), "--jobs", "1",
                "--status-interval", "0", "--lease", "2", "--shutdown-timeout", "5",
            ] + slow,
            log: fixture.directory.url("remote.log"), launcher: host.launcher, environment: server.environment)
        #expect(try await offPool { remote.waitForLog("claimed") }, "\(remote.log)")
        let namespaces = try ["self", "\(remote.process.processIdentifier)"].map {
            try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\($0)/ns/net")
        }
        #expect(namespaces[0] != namespaces[1], "the worker runs on the other host")
        try host.cut()
        let local = try worker(fixture, "local", slow, url: server.url(database: fixture.database))
        #expect(try await fixture.eventually(seconds: 60) { try fixture.states() == ["done": 1] }, "\(local.log)")
        #expect(try fixture.sql("SELECT attempt, errors->0->>'error_code' FROM imagepipe.jobs") == "2|worker_crashed")
        // The cut worker finished meanwhile and keeps trying to record it; once the link is back,
        // the fence (attempt and owner) refuses it.
        #expect(!remote.log.contains("lease lost"), "cut off, it cannot know yet: \(remote.log)")
        try host.restore()
        #expect(try await offPool { remote.waitForLog("result is dropped", seconds: 60) }, "\(remote.log)")
        let notified = try await listener.notifiedSoFar(fixture)
        #expect(notified.count == 1, "the job is counted once: \(notified)")
        #expect(try fixture.sql("SELECT result->>'attempts' FROM imagepipe.jobs") == "2")
        for worker in [remote, local] {
            worker.send(SIGTERM)
            #expect(try await offPool { worker.waitForExit(seconds: 30) } == 0, "\(worker.log.suffix(1500))")
        }
    }

    @Test func workersReconnectWhenPostgreSQLRestartsAndFinishEveryJob() async throws {
        let server = try PostgresServer()
        let fixture = try PostgresFixture(server: server)
        try await enqueueCopies(of: "images/formats/tiny.png", count: 600, into: fixture)
        let workers = try (0..<2).map { try worker(fixture, "worker-\($0)", Self.smallVariant + ["--lease", "10"]) }
        #expect(try await fixture.eventually { try fixture.states()["done", default: 0] >= 100 })
        // Down until a worker has seen it (each is busy with the rest of the jobs), then back.
        try await offPool { try server.stop() }
        #expect(
            try await offPool { workers.contains { $0.waitForLog("lost PostgreSQL", seconds: 30) } },
            "the outage is logged when it happens: \(workers.map { $0.log.suffix(1000) })")
        try await offPool { try server.start() }
        #expect(try await fixture.eventually(seconds: 120) { try fixture.states() == ["done": 600] }, "\((try? fixture.states()) ?? [:])")
        for worker in workers {
            #expect(worker.process.isRunning, "\(worker.log.suffix(2000))")
            worker.send(SIGTERM)
            #expect(try await offPool { worker.waitForExit(seconds: 30) } == 0)
        }
        #expect(
            workers.contains { $0.log.contains("PostgreSQL reachable again") },
            "the return was seen: \(workers.map { $0.log.suffix(1000) })")
    }

    @Test func aCorruptImageIsDiscardedAfterOneAttemptAndQueueCommandsLookAfterIt() async throws {
        let fixture = try PostgresFixture()
        try await enqueueCopies(of: "hostile/truncated.jpg", count: 1, into: fixture)
        let url = fixture.server.url(database: fixture.database)
        let worker = try worker(fixture, "worker", Self.smallVariant)
        #expect(try await fixture.eventually { try fixture.states() == ["failed": 1] }, "\(worker.log)")
        #expect(try fixture.sql("SELECT attempt, jsonb_array_length(errors), errors->0->>'error_code' FROM imagepipe.jobs") == "1|1|corrupt_image")

        let status = try await offPool { try CommandRunner.run(["queue", "status", url], environment: fixture.server.environment) }
        #expect(status.status == 0 && status.stdout.contains("failed\t1") && status.stdout.contains("waiting\t0"), "\(status)")
        let retry = try await offPool { try CommandRunner.run(["queue", "retry", url], environment: fixture.server.environment) }
        #expect(retry.status == 0 && retry.stderr.contains("put 1 job(s) back to wait (failed or cancelled before)"), "\(retry)")
        #expect(try await fixture.eventually { try fixture.sql("SELECT state, attempt FROM imagepipe.jobs") == "failed|1" })
        worker.send(SIGTERM)
        #expect(try await offPool { worker.waitForExit(seconds: 30) } == 0)
        let kept = try await offPool {
            try CommandRunner.run(["queue", "prune", url, "--older-than", "1"], environment: fixture.server.environment)
        }
        #expect(kept.status == 0 && kept.stderr.contains("deleted 0"), "\(kept)")
        let pruned = try await offPool {
            try CommandRunner.run(["queue", "prune", url, "--older-than", "0"], environment: fixture.server.environment)
        }
        #expect(pruned.status == 0 && pruned.stderr.contains("deleted 1"), "\(pruned)")
    }

    @Test func workersWithExitWhenEmptyWorkOffTheBacklogAndExit() async throws {
        let fixture = try PostgresFixture()
        try await enqueueCopies(of: "images/formats/tiny.png", count: 300, into: fixture)
        let broken = fixture.directory.write("src/broken.jpg", try Data(contentsOf: URL(fileURLWithPath: Self.fixtures + "/hostile/truncated.jpg")))
        let url = fixture.server.url(database: fixture.database)
        #expect(try await offPool { try CommandRunner.run(["enqueue", url, broken], environment: fixture.server.environment) }.status == 0)
        let workers = try (0..<2).map { try worker(fixture, "worker-\($0)", Self.smallVariant + ["--exit-when-empty"]) }
        for worker in workers {
            #expect(try await offPool { worker.waitForExit(seconds: 120) } == 0, "\(worker.log.suffix(2000))")
            #expect(worker.log.contains("the queue is empty"))
        }
        #expect(try fixture.states() == ["done": 300, "failed": 1])
        try await expectOutputsDecode(fixture, count: 300)
    }

    @Test func jobsAreTakenByTheirBytesAndACRLFListIsEnqueuedPathByPath() async throws {
        let fixture = try PostgresFixture()
        let sources = [
            fixture.directory.write("src/3f2a9c1e", Fixtures.data("images/formats/landscape.jpg")),
            fixture.directory.write("src/upload.dat", Fixtures.data("images/formats/tiny.png")),
            fixture.directory.write("src/notes.txt", "just some notes\n"),
            fixture.directory.write("src/x.jpg", "not a jpeg at all\n"),
            fixture.directory.write("src/empty.png", Data()),
            fixture.directory.write("src/broken.jpg", Fixtures.data("hostile/truncated.jpg")),
        ]
        let (url, environment) = (fixture.server.url(database: fixture.database), fixture.server.environment)
        let list = Data(sources.map { $0 + "\r\n" }.joined(separator: "\r\n").utf8)
        let enqueued = try await offPool { try CommandRunner.run(["enqueue", url, "-"], environment: environment, input: list) }
        #expect(enqueued.status == 0 && enqueued.stdout.split(separator: "\n").count == 6, "\(enqueued.stderr)")
        #expect(try fixture.sql("SELECT source FROM imagepipe.jobs ORDER BY id").split(separator: "\n").map(String.init) == sources)

        let worker = try worker(fixture, "worker", Self.smallVariant + ["--exit-when-empty"])
        #expect(try await offPool { worker.waitForExit(seconds: 60) } == 0, "\(worker.log.suffix(2000))")
        let rows = try fixture.sql(
            "SELECT source, state, coalesce(result->>'status', ''), coalesce(result->>'skip_code', result->>'error_code', '') FROM imagepipe.jobs ORDER BY id"
        ).split(separator: "\n").map { $0.split(separator: "|", omittingEmptySubsequences: false).map(String.init) }
        // As in a queue directory (ImageSignatureCLITests): what is no image is skipped and its job
        // done, whatever its name; only the damaged image fails.
        #expect(
            rows == [
                [sources[0], "done", "done", ""], [sources[1], "done", "done", ""],
                [sources[2], "done", "skipped", "not_an_image"], [sources[3], "done", "skipped", "not_an_image"],
                [sources[4], "done", "skipped", "not_an_image"], [sources[5], "failed", "failed", "corrupt_image"],
            ], "\(rows)")
        try await expectOutputsDecode(fixture, count: 2)

        // A line that is no path stops enqueue, naming it.
        let bad = try await offPool {
            try CommandRunner.run(["enqueue", url, "-"], environment: environment, input: Data("a.jpg\n".utf8) + Data([0xFF, 0x0A]))
        }
        #expect(bad.status == 2 && bad.stderr.contains("the list standard input, line 2: is not valid UTF-8"), "\(bad.stderr)")
    }

    /// A source queued by a relative path is read from the worker's working directory, which under
    /// systemd is not the producer's: a missing one fails naming the absolute path tried (issue 52 §5).
    @Test func aMissingSourceQueuedByARelativePathNamesTheAbsolutePathTheWorkerTried() async throws {
        let fixture = try PostgresFixture()
        let (url, environment) = (fixture.server.url(database: fixture.database), fixture.server.environment)
        fixture.directory.write("app/uploads/beach.jpg", Fixtures.data("images/formats/small-200x150.jpg"))
        fixture.directory.write("srv/.keep", "")
        let enqueued = try await offPool {
            try CommandRunner.run(["enqueue", url, "uploads/beach.jpg"], in: fixture.directory.url("app"), environment: environment)
        }
        #expect(enqueued.status == 0, "\(enqueued.stderr)")
        let worker = try WorkerProcess(
            ["watch", url, "--dest", fixture.directory.url("out"), "--status-interval", "0", "--exit-when-empty"] + Self.smallVariant,
            log: fixture.directory.url("worker.log"), environment: environment, in: fixture.directory.url("srv"))
        #expect(try await offPool { worker.waitForExit(seconds: 60) } == 0, "\(worker.log.suffix(2000))")
        let tried = fixture.directory.url("srv/uploads/beach.jpg")
        #expect(
            try fixture.sql("SELECT state, errors->-1->>'error_code', errors->-1->>'error' FROM imagepipe.jobs")
                == "failed|unreadable_source|cannot read \(tried): No such file or directory")
        let status = try await offPool { try CommandRunner.run(["queue", "status", url], environment: environment) }
        #expect(status.stdout.contains("unreadable_source: cannot read \(tried): No such file or directory"), "\(status.stdout)")
    }

    @Test func thePasswordNeverShowsInLogsOrErrors() async throws {
        let fixture = try PostgresFixture()
        let password = fixture.server.password
        let withPassword = "postgres://postgres:\(password)@127.0.0.1:\(fixture.server.port)/\(fixture.database)?sslmode=disable"
        let worker = try worker(fixture, "worker", Self.smallVariant, url: withPassword)
        let address = "postgres://postgres@127.0.0.1:\(fixture.server.port)/\(fixture.database)?queue=images"
        #expect(try await offPool { worker.waitForLog("watching queue=\"\(address)") }, "\(worker.log)")
        worker.send(SIGTERM)
        #expect(try await offPool { worker.waitForExit(seconds: 30) } == 0)
        #expect(!worker.log.contains(password))

        let wrong = "postgres://postgres:not-\(password)@127.0.0.1:\(fixture.server.port)/\(fixture.database)?sslmode=disable"
        let refused = try await offPool { try CommandRunner.run(["queue", "status", wrong], environment: [:]) }
        #expect(refused.status == 2 && refused.stderr.contains("28P01"), "\(refused)")
        #expect(!refused.stderr.contains(password) && !refused.stdout.contains(password))
        let help = try await offPool { try CommandRunner.run(["watch", "--help"]) }
        #expect(help.stdout.contains("PGPASSWORD") && !help.stdout.contains(password))
    }
}
