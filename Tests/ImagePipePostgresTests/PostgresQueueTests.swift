import Foundation
import ImagePipe
@testable import ImagePipePostgres
import ImagePipeQueue
import ImagePipeTestKit
import Logging
import PostgresNIO
import ImagePipeTestSupport
import Testing

/// The PostgreSQL queue in-process, on a real PostgreSQL started by the tests.
@Suite(.requires(PostgresServer.tool))
struct PostgresQueueTests {
    @Test func queuedJobsAreDoneOnceWithTheirResultsAndANotificationEach() async throws {
        let fixture = try PostgresFixture()
        let ids = try await fixture.enqueue(40)
        let listener = try await DoneListener(fixture.location)
        let running = RunningLoop(fixture.loop(try fixture.queue()))
        #expect(try await fixture.eventually { try fixture.states() == ["done": 40] })
        await running.stop()
        #expect(await fixture.eventually { listener.notified.count >= 40 })
        #expect(listener.notified.sorted() == ids.sorted(), "one imagepipe_done notification per job, with its ID")
        let record = try JSONDecoder().decode(
            JobResult.self,
            from: Data(
                try fixture.sql(
                    "SELECT result FROM imagepipe.jobs WHERE id = \(ids[3])"
                ).utf8))
        #expect(record.status == .done && record.source == "photo-3.jpg" && record.variants.map(\.key) == ["photo-3-t.jpg"])
        #expect(try fixture.sql("SELECT count(*) FROM imagepipe.jobs WHERE attempt <> 1 OR lease_owner IS NOT NULL") == "0")
    }

    @Test func aWorkerThatLostItsLeaseCanRecordNothingAndAnotherWorkerFinishesTheJob() async throws {
        let fixture = try PostgresFixture()
        try await fixture.enqueue(1)
        let first = try fixture.queue(lease: .seconds(1)), second = try fixture.queue(lease: .seconds(1))
        try await first.open(wake: {})
        try await second.open(wake: {})
        let claimed = try #require(await first.claim(upTo: 5).first)
        #expect(claimed.job.attempt == 1 && claimed.job.relativePath == "photo-0.jpg")
        #expect(await second.claim(upTo: 5).isEmpty, "a running job is not claimed twice")

        // The first worker renews nothing: its lease runs out.
        #expect(try await fixture.eventually { try fixture.sql("SELECT lease_expires_at < now() FROM imagepipe.jobs") == "t" })
        await second.maintain()
        let retaken = try #require(await second.claim(upTo: 5).first)
        #expect(retaken.id == claimed.id && retaken.job.attempt == 2)
        #expect(
            try fixture.sql("SELECT errors->0->>'error_code' FROM imagepipe.jobs") == "worker_crashed", "the lapse is in the job's history")

        let result = JobResult(source: "photo-0.jpg", status: .done)
        #expect(await first.heartbeat([claimed]).lost == [claimed.id], "the heartbeat finds the lease gone")
        #expect(await first.complete(claimed, result: result, notice: nil) == .leaseLost)
        #expect(await first.retry(claimed, failure: AttemptRecord(result), after: .zero) == .leaseLost)
        #expect(await second.heartbeat([retaken]) == HeartbeatOutcome())
        #expect(await second.complete(retaken, result: result, notice: nil) == .recorded)
        #expect(await second.complete(retaken, result: result, notice: nil) == .leaseLost, "a result is recorded once")
        #expect(try fixture.sql("SELECT state, attempt FROM imagepipe.jobs") == "done|2")
        await first.close()
        await second.close()
    }

    @Test func aSourceLongerThanTheLimitFailsAtOnceWithoutRunning() async throws {
        let fixture = try PostgresFixture()
        try await fixture.enqueue(1)
        // 100,000 bytes of name (compressed, it passes the index on sources): claims read 4097 of them.
        _ = try fixture.sql("SELECT imagepipe.enqueue('s3://media/' || repeat('a', 100000) || '.jpg')")
        let queue = try fixture.queue()
        try await queue.open(wake: {})
        let claimed = await queue.claim(upTo: 5)
        #expect(claimed.filter { $0.refusal == nil }.map(\.job.relativePath) == ["photo-0.jpg"], "the long source is never run")
        // It comes back refused, and is discarded as a worker settles it (the queue never does by itself).
        for job in claimed {
            guard let result = job.refusalResult else { continue }
            #expect(await queue.discard(job, failure: AttemptRecord(result), result: result, notice: nil) == .recorded)
        }
        let refused = "FROM imagepipe.jobs WHERE length(source) > 4096"
        #expect(
            try fixture.sql("SELECT state, result->>'error_code', result->>'error', length(result->>'source') \(refused)")
                == "failed|unreadable_source|the queued source is longer than the 4096 bytes a source may have|201")
        #expect(try fixture.sql("SELECT errors->0->>'error_code' \(refused)") == "unreadable_source")
        await queue.close()
    }

    @Test func aRetryWaitsOutItsBackoffInTheDatabase() async throws {
        let fixture = try PostgresFixture()
        try await fixture.enqueue(1)
        let queue = try fixture.queue()
        try await queue.open(wake: {})
        let claimed = try #require(await queue.claim(upTo: 1).first)
        let failure = AttemptRecord(JobResult(source: "photo-0.jpg", status: .failed, error: ImagePipeError(.storageUnavailable, "503 Slow Down")))
        #expect(await queue.retry(claimed, failure: failure, after: .seconds(30)) == .requeued)
        #expect(await queue.claim(upTo: 1).isEmpty, "not due before its backoff has passed")
        let wait = try #require(Double(try fixture.sql("SELECT extract(epoch FROM run_at - now()) FROM imagepipe.jobs")))
        #expect(wait > 20 && wait <= 30, "\(wait)")
        #expect(try fixture.sql("SELECT state, errors->0->>'error_code' FROM imagepipe.jobs") == "waiting|storage_unavailable")
        await queue.close()
    }

    @Test func aFailingStorageIsRetriedWithBackoffAndThenSucceeds() async throws {
        let fixture = try PostgresFixture()
        try await fixture.enqueue(3)
        // Every object fails twice, then stores.
        let storage = InMemoryStorage(failing: { _, attempt in attempt <= 2 ? ImagePipeError(.storageUnavailable, "503 Slow Down") : nil })
        let running = RunningLoop(
            fixture.loop(
                try fixture.queue(), storage: storage,
                // Each failure also pauses claiming (the store did not answer): briefly here.
                retry: RetryPolicy(maxAttempts: 5, baseDelay: .milliseconds(300)), storagePause: .milliseconds(100)))
        #expect(try await fixture.eventually { try fixture.states() == ["done": 3] })
        await running.stop()
        let rows = try fixture.sql("SELECT attempt, jsonb_array_length(errors), result->>'attempts' FROM imagepipe.jobs ORDER BY id")
        #expect(rows == "3|2|3\n3|2|3\n3|2|3", "two failed attempts recorded, the third stored")
        #expect(try fixture.sql("SELECT DISTINCT e->>'error_code' FROM imagepipe.jobs, jsonb_array_elements(errors) e") == "storage_unavailable")
    }

    @Test func permanentFailuresAndExhaustedAttemptsAreDiscardedWithEveryAttemptsError() async throws {
        let fixture = try PostgresFixture()
        try await fixture.enqueue(1, prefix: "corrupt")
        try await fixture.enqueue(1, prefix: "unreachable")
        let compressor = ScriptedCompressor(failing: { name in
            name.hasPrefix("corrupt") ? ImagePipeError(.corruptImage, "corrupt or truncated image data") : nil
        })
        let storage = InMemoryStorage.alwaysFailing(ImagePipeError(.storageUnavailable, "connection refused"))
        let running = RunningLoop(fixture.loop(try fixture.queue(), compressor: compressor, storage: storage))
        #expect(try await fixture.eventually { try fixture.states() == ["failed": 2] })
        await running.stop()
        let rows = try fixture.sql(
            """
            SELECT source LIKE '%corrupt%', attempt, (SELECT string_agg(e->>'error_code', ',') FROM jsonb_array_elements(errors) e)
            FROM imagepipe.jobs ORDER BY 1
            """)
        #expect(rows == "f|3|storage_unavailable,storage_unavailable,storage_unavailable\nt|1|corrupt_image")
    }

    @Test func aShutdownGivesUnfinishedJobsBackAtOnce() async throws {
        let fixture = try PostgresFixture()
        try await fixture.enqueue(2)
        let compressor = ScriptedCompressor(work: .seconds(60))
        let running = RunningLoop(fixture.loop(try fixture.queue(), compressor: compressor), shutdownTimeout: .milliseconds(200))
        #expect(await fixture.eventually { compressor.calls.count == 2 })
        await running.stop()
        #expect(compressor.runningCalls == 2, "the stop did not wait for the jobs' work")
        let rows = try fixture.sql("SELECT state, attempt, lease_owner IS NULL FROM imagepipe.jobs")
        #expect(rows == "waiting|0|t\nwaiting|0|t", "back to waiting, the interrupted attempt not counted: \(rows)")
    }

    @Test func uniqueEnqueueAddsNoJobForASourceWaitingOrRunning() async throws {
        let fixture = try PostgresFixture()
        let first = try await fixture.enqueue(2, unique: true)
        #expect(first.count == 2)
        #expect(try await fixture.enqueue(2, unique: true).isEmpty, "both are still waiting")
        #expect(try await fixture.enqueue(2, unique: false).count == 2, "without --unique, duplicates are added")
        #expect(try fixture.sql("SELECT imagepipe.enqueue('s3://bucket/other.jpg', 'images', true) IS NOT NULL") == "t")
        #expect(try fixture.sql("SELECT imagepipe.enqueue('s3://bucket/other.jpg', 'images', true) IS NULL") == "t")
        #expect(
            try fixture.sql("SELECT imagepipe.enqueue('s3://bucket/other.jpg', 'thumbnails', true) IS NOT NULL") == "t",
            "another queue is another queue")
    }

    @Test func workersStartingTogetherUpgradeTheSchemaOnce() async throws {
        let fixture = try PostgresFixture()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    try await QueueDatabase.run(fixture.location, logger: .quiet) { _ throws(ImagePipeError) in }
                }
            }
            try await group.waitForAll()
        }
        let versions = (1...QueueSchema.latestVersion).map(String.init).joined(separator: ",")
        #expect(try fixture.sql("SELECT string_agg(version::text, ',' ORDER BY version) FROM imagepipe.migrations") == versions)
        #expect(try fixture.sql("SELECT indexdef FROM pg_indexes WHERE indexname = 'jobs_waiting'").hasSuffix("WHERE (state = 'waiting'::text)"))
    }

    /// Schema version 5 renames the state of jobs that failed for good from `discarded` to `failed`,
    /// the word of the queue directory's folder, `queue status`, logs, metrics and notifications;
    /// a worker of an earlier version still writing `discarded` during a rolling upgrade has its
    /// rows filed as `failed`, never refused.
    @Test func upgradingRenamesDiscardedJobsFailedAndFilesAnOlderWorkersDiscardsSo() async throws {
        let fixture = try PostgresFixture()
        // The database as an imagepipe of schema version 4 left it, with a job it discarded.
        var setUp = [
            "CREATE SCHEMA imagepipe",
            "CREATE TABLE imagepipe.migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())",
        ]
        setUp += QueueSchema.migrations.prefix(4).joined()
        setUp.append("INSERT INTO imagepipe.migrations (version) VALUES (1), (2), (3), (4)")
        setUp.append("INSERT INTO imagepipe.jobs (source, state, finished_at) VALUES ('old.jpg', 'discarded', now())")
        setUp.append("INSERT INTO imagepipe.jobs (source, state, attempt) VALUES ('held.jpg', 'running', 1)")
        for statement in setUp { _ = try fixture.sql(statement) }

        try await QueueDatabase.run(fixture.location, logger: .quiet) { _ throws(ImagePipeError) in }
        #expect(try fixture.sql("SELECT source, state FROM imagepipe.jobs ORDER BY id") == "old.jpg|failed\nheld.jpg|running")
        // An older worker ends its job as it always did: the row is filed under the new word.
        _ = try fixture.sql("UPDATE imagepipe.jobs SET state = 'discarded', finished_at = now() WHERE source = 'held.jpg'")
        #expect(try fixture.states() == ["failed": 2])
        #expect(throws: (any Error).self, "no other word gets in") { try fixture.sql("UPDATE imagepipe.jobs SET state = 'gone'") }
        // What operators see says the same word, and finds both.
        let overview = try await QueueDatabase.run(fixture.location, logger: .quiet) { database throws(ImagePipeError) in
            try await database.overview()
        }
        #expect(overview.counts[.failed] == 2 && overview.jobs.map(\.state) == [.failed, .failed], "\(overview)")

        // A notice the older worker kept for its job and died with says `discarded`: the worker
        // that takes it over sends it in today's word.
        let result = JobResult(source: "held.jpg", status: .failed, error: ImagePipeError(.corruptImage, "cut short"))
        let kept = String(decoding: try JSONEncoder().encode(JobNotice(event: .failed, job: "2", result: result)), as: UTF8.self)
        let older = kept.replacingOccurrences(of: #""event":"failed""#, with: #""event":"discarded""#)
        #expect(older != kept)
        _ = try fixture.sql(
            "INSERT INTO imagepipe.notices (id, job_id, queue, body, due_at) SELECT 'n-1', id, 'images', '\(older)', now() FROM imagepipe.jobs WHERE source = 'held.jpg'"
        )
        let heir = try PostgresQueue(
            location: fixture.location, configuration: .init(lease: .seconds(30), keepsNotices: true), logger: .quiet)
        try await heir.open(wake: {})
        let taken = await heir.notices?.takeOver(limit: 10) ?? []
        #expect(taken.map(\.event) == [.failed] && taken.first?.result.status == .failed, "\(taken)")
        await heir.close()
    }

    @Test func anOpenRepeatableReadTransactionDoesNotStopClaiming() async throws {
        let fixture = try PostgresFixture()
        try await fixture.enqueue(1)
        let client = PostgresClient(configuration: try fixture.location.clientConfiguration())
        let clientTask = Task { await client.run() }
        defer { clientTask.cancel() }
        try await client.withConnection { connection in
            // Another session holds a snapshot from before the jobs are worked on.
            try await connection.query("BEGIN ISOLATION LEVEL REPEATABLE READ", logger: .quiet)
            try await connection.query("SELECT count(*) FROM imagepipe.jobs", logger: .quiet)
            try await fixture.enqueue(500, prefix: "held")
            let running = RunningLoop(fixture.loop(try fixture.queue()))
            #expect(try await fixture.eventually { try fixture.states() == ["done": 501] })
            await running.stop()
            // The statistics reach the view once flushed, a little after the transactions.
            _ = try await fixture.eventually {
                _ = try fixture.sql("SELECT pg_stat_force_next_flush()")
                return (Int(try fixture.sql("SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = 'jobs'")) ?? 0) > 0
            }
            let dead = try fixture.sql("SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = 'jobs'")
            print("dead tuples in imagepipe.jobs under an open REPEATABLE READ snapshot: \(dead)")
            #expect((Int(dead) ?? 0) > 0, "the snapshot keeps the claimed and settled versions from being vacuumed")
            try await connection.query("COMMIT", logger: .quiet)
        }
    }
}
