// What every JobQueue promises a worker, checked against each queue with one test body (see ContractQueue).
import Foundation
import ImagePipe
import ImagePipeQueue
import ImagePipeTestSupport
import Testing

/// The queue contract: the queue directory and PostgreSQL run every test here, each worker with a
/// queue of its own on the same jobs, as separate `watch` processes would. Async and in-process:
/// listed among the Makefile's IN_PROCESS_SUITES.
@Suite(.requires(PostgresServer.tool))
struct QueueContractTests {
    static let transient = ImagePipeError(.storageUnavailable, "the store did not answer")

    @Test(arguments: ContractQueue.all)
    func aClaimedJobIsHandedOutOnceAndItsSuccessRecorded(_ kind: ContractQueue) async throws {
        let jobs = try kind.open()
        try await jobs.enqueue("a.jpg")
        let worker = try await jobs.openWorker()
        let claimed = try await worker.claimOne()
        #expect(claimed.job.relativePath == "a.jpg" && claimed.job.attempt == 1)
        #expect(await worker.claim(upTo: 5).isEmpty, "the job is held")
        #expect(await worker.heartbeat([claimed]) == HeartbeatOutcome(), "a held job stays held")

        #expect(await worker.complete(claimed, result: JobResult(source: "a.jpg", status: .done), notice: nil) == .recorded)
        #expect(try jobs.places() == ["done": 1])
        #expect(await worker.claim(upTo: 5).isEmpty, "a finished job is never handed out again")
        await worker.close()
    }

    /// A source that is no image ends alike in both queues: completed `skipped` and filed `done`
    /// (a queue directory's done/, a row in state done), the state of a job that finished without
    /// failing. A queue directory once filed it under failed/.
    @Test(arguments: ContractQueue.all)
    func aJobSkippedAsNoImageIsRecordedAsDone(_ kind: ContractQueue) async throws {
        let jobs = try kind.open()
        try await jobs.enqueue("x.jpg")
        let worker = try await jobs.openWorker()
        let claimed = try await worker.claimOne()
        let skipped = JobResult.skipped("x.jpg", .notAnImage, reason: "its first bytes match no format imagepipe reads")
        #expect(await worker.complete(claimed, result: skipped, notice: nil) == .recorded)
        #expect(try jobs.places() == ["done": 1])
        #expect(await worker.claim(upTo: 5).isEmpty)
        await worker.close()
    }

    @Test(arguments: ContractQueue.all)
    func aPermanentFailureIsRecordedAsFailed(_ kind: ContractQueue) async throws {
        let jobs = try kind.open()
        try await jobs.enqueue("bad.jpg")
        let worker = try await jobs.openWorker()
        let claimed = try await worker.claimOne()
        let result = JobResult(source: "bad.jpg", status: .failed, error: ImagePipeError(.corruptImage, "not an image"))
        #expect(await worker.discard(claimed, failure: AttemptRecord(result), result: result, notice: nil) == .recorded)
        #expect(try jobs.places() == ["failed": 1])
        #expect(await worker.claim(upTo: 5).isEmpty)
        await worker.close()
    }

    /// A retried job runs again with its attempt counted, by this worker (it keeps holding it) or
    /// by whichever worker claims it once it is due (it was requeued); never by two at once.
    @Test(arguments: ContractQueue.all)
    func aRetriedJobRunsAgainAsItsNextAttempt(_ kind: ContractQueue) async throws {
        let jobs = try kind.open()
        try await jobs.enqueue("flaky.jpg")
        let worker = try await jobs.openWorker(), other = try await jobs.openWorker()
        let claimed = try await worker.claimOne()
        let failed = JobResult(source: "flaky.jpg", status: .failed, error: Self.transient)

        let again: ClaimedJob, holder: any JobQueue
        switch await worker.retry(claimed, failure: AttemptRecord(failed), after: .zero) {
        case .keepHolding:
            #expect(await other.claim(upTo: 5).isEmpty, "a job its worker keeps is nobody else's")
            var next = claimed
            next.job.attempt = 2
            (again, holder) = (next, worker)
        case .requeued:
            (again, holder) = (try await other.claimOne(), other)
            #expect(again.id == claimed.id && again.job.attempt == 2)
        case let disposition:
            Issue.record("a held job's retry was not recorded: \(disposition)")
            return
        }
        #expect(try jobs.places()["waiting"] == nil)
        #expect(await holder.complete(again, result: JobResult(source: "flaky.jpg", status: .done, attempts: 2), notice: nil) == .recorded)
        #expect(try jobs.places() == ["done": 1])
        await worker.close()
        await other.close()
    }

    @Test(arguments: ContractQueue.all)
    func aCancelledJobEndsAndIsNotRunAgain(_ kind: ContractQueue) async throws {
        let jobs = try kind.open()
        try await jobs.enqueue("stop.jpg")
        let worker = try await jobs.openWorker()
        let claimed = try await worker.claimOne()
        let result = JobResult(source: "stop.jpg", status: .failed, error: ImagePipeError(.cancelled, "cancelled on request"))
        #expect(await worker.cancel(claimed, failure: AttemptRecord(result), result: result, notice: nil) == .recorded)
        #expect(try jobs.places() == [kind.cancelledPlace: 1])
        #expect(await worker.claim(upTo: 5).isEmpty)
        await worker.close()
    }

    /// Two workers on one queue: a job one holds is not the other's, until it is given back.
    @Test(arguments: ContractQueue.all)
    func aSecondWorkerGetsNoClaimedJobButOneGivenBack(_ kind: ContractQueue) async throws {
        let jobs = try kind.open()
        for name in ["1.jpg", "2.jpg", "3.jpg"] { try await jobs.enqueue(name) }
        let first = try await jobs.openWorker(), second = try await jobs.openWorker()
        var held: [ClaimedJob] = []
        for _ in 0..<3 { held.append(try await first.claimOne()) }
        #expect(Set(held.map(\.job.relativePath)) == ["1.jpg", "2.jpg", "3.jpg"])
        await second.maintain()
        #expect(await second.claim(upTo: 5).isEmpty, "every job is held by the first worker")

        await first.release([held[1]])
        let taken = try await second.claimOne()
        #expect(taken.job.relativePath == held[1].job.relativePath)
        #expect(await second.complete(taken, result: JobResult(source: taken.job.relativePath, status: .done), notice: nil) == .recorded)
        for job in [held[0], held[2]] {
            #expect(await first.complete(job, result: JobResult(source: job.job.relativePath, status: .done), notice: nil) == .recorded)
        }
        #expect(try jobs.places() == ["done": 3])
        await first.close()
        await second.close()
    }

    /// A worker that dies holding a job (it renews nothing and settles nothing; its process, and
    /// with it a queue directory's lock, is gone): another worker gets the job and can record it.
    @Test(arguments: ContractQueue.all)
    func aJobAWorkerDiedHoldingGoesToAnotherWorker(_ kind: ContractQueue) async throws {
        let jobs = try kind.open()
        try await jobs.enqueue("orphan.jpg")
        let survivor = try await jobs.openWorker()
        let held: ClaimedJob
        do {
            let dying = try await jobs.openWorker(lease: .seconds(1))
            held = try await dying.claimOne()
            #expect(await survivor.claim(upTo: 5).isEmpty)
            // Stops listening and leaves everything as it is; the last reference goes with this scope.
            await dying.close()
        }
        let taken = try await survivor.claimOne(maintaining: true)
        #expect(taken.id == held.id && taken.job.relativePath == held.job.relativePath)
        #expect(taken.job.attempt == (kind.countsDeathsAsAttempts ? 2 : 1))
        #expect(
            await survivor.complete(taken, result: JobResult(source: "orphan.jpg", status: .done, attempts: taken.job.attempt), notice: nil)
                == .recorded)
        #expect(try jobs.places() == ["done": 1])
        await survivor.close()
    }

    /// A notice kept with its job's record outlives the worker that kept it: a notifying worker
    /// takes it over once that worker is dead, and once forgotten it is never handed out again.
    @Test(arguments: ContractQueue.all)
    func aKeptNoticeOutlivesItsWorkerUntilForgotten(_ kind: ContractQueue) async throws {
        let jobs = try kind.open()
        try await jobs.enqueue("told.jpg")
        let result = JobResult(source: "told.jpg", status: .done)
        let notice: JobNotice
        do {
            let dying = try await jobs.openWorker(lease: .seconds(1), notifies: true)
            let claimed = try await dying.claimOne()
            notice = JobNotice(event: .done, job: claimed.id, result: result)
            #expect(await dying.complete(claimed, result: result, notice: notice) == .recorded)
            await dying.close()
        }
        #expect(try jobs.places() == ["done": 1], "the record is there whatever becomes of its notice")

        // The heir, too, is gone before the next worker comes: nothing of its own holds the notice.
        do {
            let heir = try await jobs.openWorker(lease: .seconds(1), notifies: true)
            let deadline = ContinuousClock.now + .seconds(60)
            var taken: [JobNotice] = []
            while taken.isEmpty && ContinuousClock.now < deadline {
                await heir.maintain()
                taken = await heir.notices?.takeOver(limit: 10) ?? []
                if taken.isEmpty { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(taken.map(\.id) == [notice.id] && taken.first?.result.source == "told.jpg", "\(taken)")
            await heir.notices?.forget([notice.id])
            await heir.close()
        }

        let later = try await jobs.openWorker(lease: .seconds(1), notifies: true)
        // Past a lease of the heir's, whose hold on the notice would have lapsed had it not forgotten it.
        try await Task.sleep(for: .seconds(2))
        await later.maintain()
        #expect(await later.notices?.takeOver(limit: 10).isEmpty == true, "a forgotten notice is gone")
        await later.close()
    }
}
