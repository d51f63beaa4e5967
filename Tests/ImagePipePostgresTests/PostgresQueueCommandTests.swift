import Foundation
#if canImport(Glibc)
import Glibc
#endif
import ImagePipe
@testable import ImagePipePostgres
import ImagePipeTestSupport
import Testing

/// `imagepipe queue list|cancel|status` and `enqueue --priority|--run-at` on PostgreSQL: the built
/// binary, real PostgreSQL, a real worker.
@Suite(.offThePool, .serialized, .requires(PostgresServer.tool))
struct PostgresQueueCommandTests {
    static let smallVariant = ["--variant", "t=32x32,jpeg,q70"]

    func run(
        _ fixture: PostgresFixture, _ arguments: [String], input: Data? = nil, environment: [String: String] = [:]
    ) async throws
        -> CommandRunner.Output
    {
        let all = fixture.server.environment.merging(environment) { $1 }
        return try await offPool { try CommandRunner.run(arguments, environment: all, input: input) }
    }

    func worker(_ fixture: PostgresFixture, _ name: String, _ extra: [String] = [], environment: [String: String] = [:]) throws -> WorkerProcess {
        try WorkerProcess(
            [
                "watch", fixture.server.url(database: fixture.database), "--dest", fixture.directory.url("out"), "--jobs", "1",
                "--uploads", "1", "--status-interval", "0", "--lease", "30", "--shutdown-timeout", "5",
            ] + Self.smallVariant + extra,
            log: fixture.directory.url(name + ".log"), environment: fixture.server.environment.merging(environment) { $1 })
    }

    /// Copies of tiny.png under `names`, their absolute paths.
    func sources(_ fixture: PostgresFixture, _ names: [String]) -> [String] {
        names.map { fixture.directory.write("src/\($0).png", Fixtures.data("images/formats/tiny.png")) }
    }

    @Test func aLowerPriorityNumberIsClaimedFirstAndRunAtDelaysAJob() async throws {
        let fixture = try PostgresFixture()
        let url = fixture.server.url(database: fixture.database)
        // Six ordinary jobs, then an urgent one enqueued last: a worker whose pipeline holds three
        // claims the urgent one in its first claim, before ordinary ones enqueued earlier.
        let ordinary = try await run(fixture, ["enqueue", url, "--priority", "5"] + sources(fixture, (0..<6).map { "ordinary-\($0)" }))
        #expect(ordinary.status == 0, "\(ordinary)")
        let urgent = try await run(fixture, ["enqueue", url, "--priority", "-1"] + sources(fixture, ["urgent"]))
        let urgentID = try #require(urgent.stdout.split(separator: "\t").first.map(String.init), "\(urgent)")
        let waiting = try await run(fixture, ["queue", "list", url, "--state", "waiting"])
        #expect(waiting.stdout.hasPrefix("\(urgentID)\twaiting\t") && waiting.stdout.contains("priority -1"), "\(waiting)")

        let first = try worker(fixture, "worker", ["--exit-when-empty"])
        #expect(try await offPool { first.waitForExit(seconds: 60) } == 0, "\(first.log)")
        #expect(try fixture.states() == ["done": 7])
        // The first claim's jobs share one started_at.
        #expect(try fixture.sql("SELECT started_at = (SELECT min(started_at) FROM imagepipe.jobs) FROM imagepipe.jobs WHERE id = \(urgentID)") == "t")
        #expect(try fixture.sql("SELECT count(*) FROM imagepipe.jobs WHERE started_at > (SELECT min(started_at) FROM imagepipe.jobs)") != "0")

        let later = try await run(fixture, ["enqueue", url, "--run-at", "+1h"] + sources(fixture, ["later"]))
        let laterID = try #require(later.stdout.split(separator: "\t").first.map(String.init), "\(later)")
        #expect(
            try fixture.sql(
                "SELECT run_at BETWEEN now() + interval '59 minutes' AND now() + interval '61 minutes' FROM imagepipe.jobs WHERE id = \(laterID)")
                == "t")
        let fixed = try await run(fixture, ["enqueue", url, "--run-at", "2031-02-03T04:05:06Z"] + sources(fixture, ["fixed"]))
        let fixedID = try #require(fixed.stdout.split(separator: "\t").first.map(String.init), "\(fixed)")
        #expect(try fixture.sql("SELECT run_at = '2031-02-03T04:05:06Z' FROM imagepipe.jobs WHERE id = \(fixedID)") == "t")
        let list = try await run(fixture, ["queue", "list", url, "--state", "waiting", "--json"])
        let due = list.stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(due.count == 2 && due.allSatisfy { ($0["due_in_s"] as? Double ?? 0) > 3500 }, "\(list)")
        // A worker leaves jobs that are not due.
        let idle = try worker(fixture, "idle")
        #expect(try await offPool { idle.waitForLog("watching") }, "\(idle.log)")
        #expect(try fixture.states() == ["done": 7, "waiting": 2])
        idle.send(SIGTERM)
        #expect(try await offPool { idle.waitForExit(seconds: 30) } == 0)

        let bad = try await run(fixture, ["enqueue", url, "--run-at", "tomorrow", "x.jpg"])
        #expect(bad.status == 2 && bad.stderr.contains("--run-at 'tomorrow' is neither"), "\(bad)")
    }

    @Test func listShowsDiscardedJobsWithTheirLastErrorAndCancelStopsAWaitingJob() async throws {
        let fixture = try PostgresFixture()
        let url = fixture.server.url(database: fixture.database)
        let broken = fixture.directory.write("src/broken.jpg", Fixtures.data("hostile/truncated.jpg"))
        #expect(try await run(fixture, ["enqueue", url, broken]).status == 0)
        let first = try worker(fixture, "worker", ["--exit-when-empty"])
        #expect(try await offPool { first.waitForExit(seconds: 60) } == 0, "\(first.log)")
        let discarded = try await run(fixture, ["queue", "list", url, "--state", "failed"])
        #expect(discarded.status == 0, "\(discarded)")
        let fields = discarded.stdout.split(separator: "\n").first?.split(separator: "\t").map(String.init) ?? []
        #expect(fields.count == 5 && fields[1] == "failed" && fields[3] == broken, "\(discarded.stdout)")
        #expect(fields.last?.hasPrefix("after 1 attempt, corrupt_image: ") == true, "\(fields)")
        // Every state, as without --state, and two of them: the same job, once (its age aside).
        func withoutAge(_ text: String) -> [[String]] {
            text.split(separator: "\n").map { line in line.split(separator: "\t").enumerated().filter { $0.offset != 2 }.map { String($0.element) } }
        }
        for states in [[], ["--state", "waiting", "--state", "failed"]] {
            let all = try await run(fixture, ["queue", "list", url] + states)
            #expect(all.status == 0 && withoutAge(all.stdout) == withoutAge(discarded.stdout), "\(states): \(all)")
        }

        let waiting = try await run(fixture, ["enqueue", url, "--run-at", "+1h"] + sources(fixture, ["a"]))
        let id = try #require(Int(waiting.stdout.split(separator: "\t").first ?? ""), "\(waiting)")
        let cancel = try await run(fixture, ["queue", "cancel", url, "\(id)"])
        #expect(cancel.status == 0 && cancel.stdout == "\(id)\tcancelled\n", "\(cancel)")
        #expect(try fixture.sql("SELECT state, finished_at IS NOT NULL FROM imagepipe.jobs WHERE id = \(id)") == "cancelled|t")
        let again = try await run(fixture, ["queue", "cancel", url, "\(id)", "999999"])
        #expect(again.status == 1 && again.stderr.contains("job \(id) is cancelled already") && again.stderr.contains("no job 999999"), "\(again)")
        let named = try await run(fixture, ["queue", "cancel", url, "photo.jpg"])
        #expect(named.status == 2 && named.stderr.contains("'photo.jpg' is not a job ID: a PostgreSQL queue's jobs are numbered"), "\(named)")
        let status = try await run(fixture, ["queue", "status", url, "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any], "\(status)")
        #expect(object["counts"] as? [String: Int] == ["waiting": 0, "running": 0, "done": 0, "failed": 1, "cancelled": 1])
        // A cancelled job can be run after all; prune deletes cancelled jobs with the other finished ones.
        let retry = try await run(fixture, ["queue", "retry", url, "\(id)"])
        #expect(retry.status == 0 && retry.stderr.contains("put 1 job(s) back to wait (failed or cancelled before)"), "\(retry)")
        let unknown = try await run(fixture, ["queue", "retry", url, "999999"])
        #expect(unknown.status == 1 && unknown.stderr.contains("job 999999 was not put back"), "\(unknown)")
        #expect(try fixture.sql("SELECT state, cancel_requested_at IS NULL FROM imagepipe.jobs WHERE id = \(id)") == "waiting|t")
        #expect(try await run(fixture, ["queue", "cancel", url, "\(id)"]).status == 0)
        let pruned = try await run(fixture, ["queue", "prune", url, "--older-than", "0s"])
        #expect(pruned.status == 0 && pruned.stderr.contains("deleted 2 finished job(s)"), "\(pruned)")
    }

    /// A running job held in its first stage (its source is read from a server that answers only when
    /// told) is cancelled: its worker hears of it, the job stops at its next safe point once the read
    /// returns, nothing is stored, and it ends cancelled, not retried.
    /// A running job whose worker died keeps its row `running` until a worker takes it back:
    /// `queue status` and `queue list` say it is abandoned and when its lease expired, as they say
    /// of a dead worker's claim area on a queue directory; a live worker's job is not.
    @Test func aJobWhoseLeaseExpiredIsShownAbandonedWithTheLeasesExpiry() async throws {
        let fixture = try PostgresFixture()
        let url = fixture.server.url(database: fixture.database)
        let enqueued = try await run(fixture, ["enqueue", url] + sources(fixture, ["dead", "live"]))
        #expect(enqueued.status == 0, "\(enqueued)")
        // Claimed as a worker claims: one by a worker that died a while ago, one by a live one.
        _ = try fixture.sql(
            """
            UPDATE imagepipe.jobs SET state = 'running', attempt = 1, started_at = now() - interval '2 minutes',
                lease_owner = CASE WHEN source LIKE '%dead.png' THEN 'web1-4242-9f1c' ELSE 'web2-77-a0b1' END,
                lease_expires_at = CASE WHEN source LIKE '%dead.png' THEN timestamptz '2025-06-01 09:00:30+00'
                                        ELSE now() + interval '1 hour' END
            """)
        let expected = "worker web1-4242-9f1c, abandoned: its lease expired at 2025-06-01T09:00:30Z (the next worker to look takes the job back)"
        for arguments in [["queue", "status", url], ["queue", "list", url, "--state", "running"]] {
            let output = try await run(fixture, arguments)
            #expect(output.status == 0, "\(output)")
            let running = output.stdout.split(separator: "\n").filter { $0.contains("\trunning\t") }
            #expect(running.count == 2, "\(output.stdout)")
            #expect(running.contains { $0.hasSuffix("dead.png\tattempt 1, \(expected)") }, "\(arguments): \(output.stdout)")
            #expect(running.contains { $0.hasSuffix("live.png\tattempt 1, worker web2-77-a0b1") }, "\(arguments): \(output.stdout)")
        }
    }

    @Test func cancellingARunningJobStopsItAtItsNextSafePointAndRecordsItCancelled() async throws {
        let fixture = try PostgresFixture()
        let url = fixture.server.url(database: fixture.database)
        let held = try HelperProcess(
            "held_source.py", in: URL(fileURLWithPath: #filePath).deletingLastPathComponent().path + "/Support/python",
            ["--file", Fixtures.root + "/images/formats/landscape.jpg"])
        let enqueued = try await run(fixture, ["enqueue", url, "supabase://uploads/2024/photo.jpg"])
        let id = try #require(Int(enqueued.stdout.split(separator: "\t").first ?? ""), "\(enqueued)")
        let running = try worker(
            fixture, "worker", ["--log-level", "debug", "--metrics-address", "127.0.0.1:0"],
            environment: ["SUPABASE_URL": "http://127.0.0.1:\(held.port)", "SUPABASE_SERVICE_ROLE_KEY": "test-key"])
        try await offPool { _ = try held.call(["cmd": "wait_request"]) }
        #expect(try fixture.sql("SELECT state FROM imagepipe.jobs WHERE id = \(id)") == "running")

        let cancel = try await run(fixture, ["queue", "cancel", url, "\(id)"])
        #expect(cancel.status == 0 && cancel.stdout == "\(id)\tcancel_requested\n", "\(cancel)")
        let listed = try await run(fixture, ["queue", "list", url, "--state", "running"])
        #expect(listed.stdout.contains("cancel requested"), "\(listed)")
        // The lease is 30 s: the worker hears of the request by its notification, not a heartbeat.
        #expect(try await offPool { running.waitForLog("cancel requested: the job stops at its next safe point", seconds: 10) }, "\(running.log)")
        #expect(try fixture.sql("SELECT state FROM imagepipe.jobs WHERE id = \(id)") == "running", "it runs until its next safe point")
        try await offPool { _ = try held.call(["cmd": "release"]) }

        #expect(
            try await fixture.eventually(seconds: 30) { try fixture.sql("SELECT state FROM imagepipe.jobs WHERE id = \(id)") == "cancelled" },
            "\(running.log)")
        #expect(
            try fixture.sql(
                "SELECT attempt, errors->-1->>'error_code', result->>'status', result->>'error_code' FROM imagepipe.jobs WHERE id = \(id)")
                == "1|cancelled|failed|cancelled")
        #expect(fixture.directory.files(under: "out").isEmpty, "nothing was stored after the safe point")
        #expect(running.log.contains("cancelled"))
        // The metrics name its fate as the row and the log do: cancelled, not a failure.
        let address = try #require(try await offPool { running.monitoringAddress() }, "\(running.log)")
        let jobs = LoopbackHTTP.get("http://\(address)/metrics").body.split(separator: "\n").filter { $0.hasPrefix("imagepipe_jobs_total{") }
        #expect(jobs.count == 1 && jobs[0].contains(#"outcome="cancelled""#) && jobs[0].hasSuffix(" 1"), "\(jobs)")
        running.send(SIGTERM)
        #expect(try await offPool { running.waitForExit(seconds: 30) } == 0, "\(running.log)")
        #expect(try fixture.sql("SELECT state, attempt FROM imagepipe.jobs WHERE id = \(id)") == "cancelled|1", "never retried")
    }

    /// `queue status` on a database that has no queue says so and leaves it as it was; a role that
    /// may not create the schema gets the reason and what to do, not a driver's struct dump.
    @Test func aReadOnlyCommandCreatesNothingAndAWrongRoleIsNamedWithTheReason() async throws {
        let fixture = try PostgresFixture()
        let url = fixture.server.url(database: fixture.database)
        let status = try await run(fixture, ["queue", "status", url])
        #expect(status.status == 2, "\(status)")
        #expect(status.stderr.contains("no imagepipe queue here: postgres://postgres@127.0.0.1:"), "\(status.stderr)")
        #expect(try fixture.sql("SELECT count(*) FROM pg_namespace WHERE nspname = 'imagepipe'") == "0", "no schema was created")
        for command in [["queue", "list", url], ["queue", "prune", url, "--older-than", "1d"]] {
            let output = try await run(fixture, command)
            #expect(output.status == 2 && output.stderr.contains("no imagepipe queue here"), "\(command): \(output)")
        }
        #expect(try fixture.sql("SELECT count(*) FROM pg_namespace WHERE nspname = 'imagepipe'") == "0")

        // A role that can log in but may not create the schema in this database (PostgreSQL grants
        // PUBLIC no CREATE on a database).
        let role = "r_" + fixture.database
        try fixture.server.sql("CREATE ROLE \(role) LOGIN PASSWORD 'role-secret'")
        let roleURL = "postgres://\(role):role-secret@127.0.0.1:\(fixture.server.port)/\(fixture.database)?queue=images&sslmode=disable"
        let enqueue = try await run(fixture, ["enqueue", roleURL] + sources(fixture, ["a"]), environment: ["PGPASSWORD": ""])
        #expect(enqueue.status == 2, "\(enqueue)")
        #expect(enqueue.stderr.contains("cannot open the queue postgres://\(role)@127.0.0.1:"), "\(enqueue.stderr)")
        #expect(enqueue.stderr.contains("permission denied") && enqueue.stderr.contains("GRANT CREATE ON DATABASE"), "\(enqueue.stderr)")
        #expect(!enqueue.stderr.contains("PostgresTransactionError") && !enqueue.stderr.contains("role-secret"), "\(enqueue.stderr)")
        // A database that does not exist, and a role that does not: each named, with what to run.
        let noDatabase = try await run(fixture, ["enqueue", fixture.server.url(database: fixture.database + "x")] + sources(fixture, ["b"]))
        #expect(noDatabase.status == 2 && noDatabase.stderr.contains("does not exist") && noDatabase.stderr.contains("createdb"), "\(noDatabase)")
        let noRole = "postgres://nobody_\(fixture.database):x@127.0.0.1:\(fixture.server.port)/\(fixture.database)?sslmode=disable"
        let wrongRole = try await run(fixture, ["queue", "status", noRole])
        #expect(wrongRole.status == 2 && wrongRole.stderr.contains("check the password in the URL"), "\(wrongRole)")
        // The server says the same for a wrong password: the hint names the role's two fixes, the
        // password first (the role made by the set-up page exists), with the role as the URL gives it.
        let wrongPassword = "postgres://\(role):not-its-password@127.0.0.1:\(fixture.server.port)/\(fixture.database)?sslmode=disable"
        let refused = try await run(fixture, ["queue", "status", wrongPassword])
        #expect(refused.status == 2, "\(refused)")
        #expect(refused.stderr.contains("psql -c \"ALTER ROLE \(role) PASSWORD '...'\""), "\(refused.stderr)")
        #expect(refused.stderr.contains("psql's \\password \(role)"), "\(refused.stderr)")
        #expect(refused.stderr.contains("if the role does not exist: createuser --pwprompt \(role)"), "\(refused.stderr)")
        #expect(!refused.stderr.contains("not-its-password"), "\(refused.stderr)")
        // No server at the address: the system's reason and what to check, not the driver's nest of types.
        // It is a wrong set-up, exit status 2 as docs/queues.md says of every one, for each command
        // that does not wait for its server.
        let nowhereURL = "postgres://postgres@127.0.0.1:1/\(fixture.database)?sslmode=disable"
        let nowhere = try await run(fixture, ["queue", "status", nowhereURL])
        #expect(nowhere.status == 2 && nowhere.stderr.contains("cannot connect (connection refused): is the server running"), "\(nowhere)")
        #expect(!nowhere.stderr.contains("SingleConnectionFailure"), "\(nowhere.stderr)")
        let enqueueNowhere = try await run(fixture, ["enqueue", nowhereURL] + sources(fixture, ["c"]))
        #expect(enqueueNowhere.status == 2 && enqueueNowhere.stderr.contains("connection refused"), "\(enqueueNowhere)")
    }

    /// The first mistake of a new set-up, no password at all, is said as what is missing and the three
    /// places it may be given, not as the driver's name for it (`authMechanismRequiresPassword`).
    @Test func aMissingPasswordSaysWhereToGiveIt() async throws {
        let fixture = try PostgresFixture()
        // No password anywhere: none in the URL, PGPASSWORD taken out of the environment, no password
        // file in a home of its own (the tests' server checks passwords on TCP).
        let home = TemporaryDirectory(prefix: "imagepipe-home")
        let output = try await offPool {
            try CommandRunner.run(
                executable: "/usr/bin/env",
                ["-u", "PGPASSWORD", "-u", "PGPASSFILE", CommandRunner.binary, "enqueue", fixture.server.url(database: fixture.database)]
                    + sources(fixture, ["a"]),
                environment: ["HOME": home.path])
        }
        #expect(output.status == 2, "\(output)")
        #expect(output.stderr.contains("the server asks for a password and none was given"), "\(output.stderr)")
        for place in ["PGPASSWORD", "~/.pgpass", "PGPASSFILE", "postgres://ROLE:PASSWORD@HOST/DATABASE"] {
            #expect(output.stderr.contains(place), "\(place) is not named in \(output.stderr)")
        }
        #expect(!output.stderr.contains("authMechanismRequiresPassword"), "\(output.stderr)")
        #expect(try fixture.sql("SELECT count(*) FROM pg_namespace WHERE nspname = 'imagepipe'") == "0", "nothing was created")
    }
}
