// What every queue promises its workers and its admin commands, one rule at a time, run against each driver (see ContractQueue).
import Foundation
public import ImagePipe
public import ImagePipeQueue
public import Testing

/// One rule of the queue contract, checked against a kind of queue.
public struct QueueRule: Sendable, CustomTestStringConvertible {
    public let testDescription: String
    let body: @Sendable (ContractQueue) async throws -> Void

    /// Checks the rule on fresh jobs of `kind`.
    public func check(_ kind: ContractQueue) async throws { try await body(kind) }
}

/// The queue contract: what a worker's queue and a queue's driver promise, whatever keeps the
/// jobs. Each test target that brings a queue runs every rule against it, each worker with a queue
/// of its own on the same jobs, as separate `watch` processes would; the queue directory's in the
/// fast tier, PostgreSQL's where its server runs. River's driver suite is the model: a new queue
/// passes these before anything else.
public enum QueueContract {
    static let transient = ImagePipeError(.storageUnavailable, "the store did not answer")

    public static let rules: [QueueRule] = [
        QueueRule(testDescription: "a claimed job is handed out once and its success recorded", body: claimedOnce),
        QueueRule(testDescription: "jobs are claimed in the order they came, a lower priority number first", body: claimOrder),
        QueueRule(testDescription: "a job skipped as no image is recorded as done", body: skippedIsDone),
        QueueRule(testDescription: "a permanent failure is recorded as failed", body: permanentFailure),
        QueueRule(testDescription: "a retried job runs again as its next attempt", body: retriedRunsAgain),
        QueueRule(testDescription: "a job cancelled by its worker ends and is not run again", body: cancelledByWorker),
        QueueRule(testDescription: "a second worker gets no claimed job but one given back", body: secondWorker),
        QueueRule(testDescription: "a job a worker died holding goes to another worker", body: orphanGoesOn),
        QueueRule(testDescription: "a claim lasts while its worker lives, and a lost one records nothing", body: leaseLoss),
        QueueRule(testDescription: "a job whose options cannot be used is claimed with its refusal", body: refusal),
        QueueRule(testDescription: "the empty check counts due jobs, and a dead worker's as due again", body: emptyCheck),
        QueueRule(testDescription: "waiting and running jobs are cancelled through the driver, or it says it cannot", body: cancelThroughDriver),
        QueueRule(testDescription: "a job workers keep dying with fails worker_crashed, told exactly once", body: failedAfterDeaths),
        QueueRule(testDescription: "failed jobs go back to wait through the driver", body: retryFailed),
        QueueRule(testDescription: "the driver lists, counts and prunes finished jobs", body: listStatusPrune),
        QueueRule(testDescription: "a kept notice outlives its worker until forgotten", body: keptNotice),
    ]

    static func claimedOnce(_ kind: ContractQueue) async throws {
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

    /// Claims come in the order jobs came. A queue whose producers give priorities (`imagepipe
    /// enqueue --priority`) hands out a lower number first, whatever came first; one that takes
    /// no enqueue (a queue directory's jobs are files) says so through its driver.
    static func claimOrder(_ kind: ContractQueue) async throws {
        let jobs = try kind.open()
        for name in ["1.jpg", "2.jpg", "3.jpg"] { try await jobs.enqueue(name) }
        let worker = try await jobs.openWorker()
        var order: [String] = []
        for _ in 0..<3 { order.append(try await worker.claimOne().job.relativePath) }
        #expect(order == ["1.jpg", "2.jpg", "3.jpg"])

        let driver = try jobs.driver()
        let request = { (priority: Int) in EnqueueRequest(priority: priority) }
        let added = await outcome { () async throws(ImagePipeError) in
            _ = try await driver.enqueue(request(5)) { session throws(ImagePipeError) in try await session.add(["/srv/late.jpg"]) }
            _ = try await driver.enqueue(request(-1)) { session throws(ImagePipeError) in try await session.add(["/srv/first.jpg"]) }
        }
        if case .failure(let error) = added {
            #expect(error.code == .configuration && error.reason.contains("does not apply"), "\(error)")
            await worker.close()
            return
        }
        #expect(try await worker.claimOne().job.relativePath == "first.jpg", "priority -1 before 5, though it came later")
        #expect(try await worker.claimOne().job.relativePath == "late.jpg")
        await worker.close()
    }

    /// A source that is no image ends alike in both queues: completed `skipped` and filed `done`.
    static func skippedIsDone(_ kind: ContractQueue) async throws {
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

    static func permanentFailure(_ kind: ContractQueue) async throws {
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
    static func retriedRunsAgain(_ kind: ContractQueue) async throws {
        let jobs = try kind.open()
        try await jobs.enqueue("flaky.jpg")
        let worker = try await jobs.openWorker(), other = try await jobs.openWorker()
        let claimed = try await worker.claimOne()
        let failed = JobResult(source: "flaky.jpg", status: .failed, error: transient)

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

    static func cancelledByWorker(_ kind: ContractQueue) async throws {
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
    static func secondWorker(_ kind: ContractQueue) async throws {
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
    static func orphanGoesOn(_ kind: ContractQueue) async throws {
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

    /// A claim holds while its worker lives: a queue with leases keeps it while they are renewed
    /// and hands the job to another once they lapse, refusing the first worker's late results; a
    /// queue whose claims live as long as the worker's process never takes a live worker's job.
    /// Either way a job's outcome is recorded once.
    static func leaseLoss(_ kind: ContractQueue) async throws {
        let jobs = try kind.open()
        try await jobs.enqueue("slow.jpg")
        let first = try await jobs.openWorker(lease: .seconds(1)), other = try await jobs.openWorker()
        let claimed = try await first.claimOne()
        let done = JobResult(source: "slow.jpg", status: .done)
        if first.heartbeatInterval == nil {
            await other.maintain()
            #expect(await other.claim(upTo: 5).isEmpty, "a live worker's claim is nobody else's")
            #expect(await first.heartbeat([claimed]) == HeartbeatOutcome())
            #expect(await first.complete(claimed, result: done, notice: nil) == .recorded)
        } else {
            // The first worker renews nothing: its lease lapses, and the other takes the job over.
            let taken = try await other.claimOne(maintaining: true)
            #expect(taken.id == claimed.id && taken.job.attempt == claimed.job.attempt + 1)
            #expect(await first.heartbeat([claimed]).lost == [claimed.id], "the heartbeat finds the claim gone")
            #expect(await first.complete(claimed, result: done, notice: nil) == .leaseLost)
            #expect(await first.retry(claimed, failure: AttemptRecord(done), after: .zero) == .leaseLost)
            let failed = JobResult(source: "slow.jpg", status: .failed, error: transient)
            #expect(await first.discard(claimed, failure: AttemptRecord(failed), result: failed, notice: nil) == .leaseLost)
            #expect(await other.complete(taken, result: done, notice: nil) == .recorded)
            #expect(await other.complete(taken, result: done, notice: nil) != .recorded, "a result is recorded once")
        }
        #expect(await first.complete(claimed, result: done, notice: nil) != .recorded, "a result is recorded once")
        #expect(try jobs.places() == ["done": 1])
        await first.close()
        await other.close()
    }

    /// Options that cannot be used do not stop the claim, nor fail the job behind the worker's
    /// back: it comes with its refusal, for the worker to settle.
    static func refusal(_ kind: ContractQueue) async throws {
        let jobs = try kind.open()
        try await jobs.enqueue("odd.jpg", #"{"focus": "middle"}"#)
        let worker = try await jobs.openWorker()
        let claimed = try await worker.claimOne()
        let refusal = try #require(claimed.refusal, "claimed with its refusal")
        #expect(refusal.code == .invalidJobOptions && refusal.reason.contains("focus"), "\(refusal)")
        #expect(try jobs.places()["failed"] == nil, "the queue settles nothing by itself")
        let result = JobResult(source: "odd.jpg", status: .failed, error: refusal)
        #expect(await worker.discard(claimed, failure: AttemptRecord(result), result: result, notice: nil) == .recorded)
        #expect(try jobs.places() == ["failed": 1])
        await worker.close()
    }

    /// What `--exit-when-empty` asks: nothing due in an empty queue, a new job due, a job a live
    /// worker holds not due, and a job due again once the worker that held it is dead.
    static func emptyCheck(_ kind: ContractQueue) async throws {
        let jobs = try kind.open()
        let worker = try await jobs.openWorker()
        #expect(await worker.remainder(dueWithin: .zero)?.due == 0)
        try await jobs.enqueue("held.jpg")
        #expect(await worker.remainder(dueWithin: .zero)?.due == 1)
        // A lease that outlasts the test: the claim must not lapse however slow the machine is.
        let live = try await jobs.openWorker(lease: .seconds(300))
        _ = try await live.claimOne()
        // Asked of a worker that opens now: one that saw the delivery may count it until it tries to claim it.
        let checker = try await jobs.openWorker()
        #expect(await checker.remainder(dueWithin: .zero)?.due == 0, "a job a live worker holds is not waiting")
        await checker.close()

        try await jobs.enqueue("orphan.jpg")
        do {
            let dying = try await jobs.openWorker(lease: .seconds(1))
            #expect(try await dying.claimOne().job.relativePath == "orphan.jpg")
            await dying.close()
        }
        try await worker.maintain(until: { await worker.remainder(dueWithin: .zero)?.due == 1 })
        #expect(try jobs.places() == ["waiting": 1], "the dead worker's job waits again, the live worker's is still held")
        await live.close()
        await worker.close()
    }

    /// `queue cancel`: a waiting job ends cancelled at once and is told; a running one is asked,
    /// its worker hears it at its next heartbeat and records it cancelled. A queue that has no
    /// cancel says so through its driver, with what to do instead.
    static func cancelThroughDriver(_ kind: ContractQueue) async throws {
        let jobs = try kind.open()
        for name in ["running.jpg", "waiting.jpg"] { try await jobs.enqueue(name) }
        let worker = try await jobs.openWorker(notifies: true)
        let running = try await worker.claimOne()
        let driver = try jobs.driver()
        let waiting = try #require(try await driver.list(.waiting, limit: 10).first)
        let report: AdminReport
        // The waiting job named twice: its first mention cancels it, the second finds nothing to do.
        switch await outcome({ () async throws(ImagePipeError) in try await driver.cancel([waiting.id, running.id, waiting.id]) }) {
        case .success(let done):
            report = done
        case .failure(let error):
            #expect(error.code == .configuration && error.reason.contains("queue cancel does not apply"), "\(error)")
            #expect(!driver.states.contains(.cancelled), "a queue without cancel lists no cancelled jobs")
            await worker.close()
            return
        }
        #expect(report.lines == ["\(waiting.id)\tcancelled", "\(running.id)\tcancel_requested"] && report.problems.count == 1, "\(report)")
        #expect(try await driver.cancel(["\(waiting.id)"]).problems.count == 1, "a finished job has nothing to cancel")
        #expect(await worker.heartbeat([running]).cancelRequested == [running.id])
        let result = JobResult(source: "running.jpg", status: .failed, error: ImagePipeError(.cancelled, "cancelled on request"))
        #expect(await worker.cancel(running, failure: AttemptRecord(result), result: result, notice: nil) == .recorded)
        #expect(try jobs.places() == [kind.cancelledPlace: 2])
        // The waiting job's end is told as a worker's settlement is: a notice for the next notifying worker.
        let notices = try await takeNotices(from: [worker], count: 1)
        #expect(notices.map(\.event) == [.cancelled] && notices.first?.job == waiting.id, "\(notices)")
        #expect(try await driver.list(.cancelled, limit: 10).count == 2)
        await worker.close()
    }

    /// Workers that die holding a job, as many as `--max-attempts`: it ends failed with one code
    /// for every queue, `worker_crashed`, and its notice is kept with its record, so exactly one
    /// notifying worker sends it, whichever found it.
    static func failedAfterDeaths(_ kind: ContractQueue) async throws {
        let jobs = try kind.open()
        try await jobs.enqueue("deadly.jpg")
        var held: ClaimedJob?
        for death in 1...2 {
            let dying = try await jobs.openWorker(lease: .seconds(1), maxAttempts: 2)
            let claimed = try await dying.claimOne(maintaining: true)
            #expect(held == nil || claimed.id == held?.id)
            held = claimed
            #expect(try jobs.places()["failed"] == nil, "after \(death - 1) deaths it is not failed yet")
            await dying.close()
        }
        let id = try #require(held?.id)
        let first = try await jobs.openWorker(notifies: true, maxAttempts: 2), second = try await jobs.openWorker(notifies: true, maxAttempts: 2)
        try await first.maintain(until: {
            await second.maintain()
            return try jobs.places() == ["failed": 1]
        })
        let notices = try await takeNotices(from: [first, second], count: 1)
        #expect(notices.count == 1, "told exactly once: \(notices)")
        let notice = try #require(notices.first)
        #expect(notice.event == .failed && notice.job == id && notice.result.errorCode == .workerCrashed, "\(notice)")
        #expect(notice.result.status == .failed && notice.result.attempts == 2)
        let failed = try #require(try await jobs.driver().list(.failed, limit: 10).first)
        #expect(failed.id == id && failed.errorCode == "\(ImagePipeError.Code.workerCrashed)", "\(failed)")
        #expect(await first.claim(upTo: 5).isEmpty, "given to no one")
        #expect(await second.claim(upTo: 5).isEmpty, "given to no one")
        await first.close()
        await second.close()
    }

    /// `queue retry`: a failed job goes back to wait, from its first attempt.
    static func retryFailed(_ kind: ContractQueue) async throws {
        let jobs = try kind.open()
        try await jobs.enqueue("again.jpg")
        let worker = try await jobs.openWorker()
        let claimed = try await worker.claimOne()
        let result = JobResult(source: "again.jpg", status: .failed, error: ImagePipeError(.storageRejected, "refused"))
        #expect(await worker.discard(claimed, failure: AttemptRecord(result), result: result, notice: nil) == .recorded)
        let driver = try jobs.driver()
        #expect(try await driver.retry(["424242"]).problems.count == 1, "a job that is not there is named")
        let report = try await driver.retry([])
        #expect(report.count == 1 && report.problems.isEmpty, "\(report)")
        #expect(try jobs.places() == ["waiting": 1])
        let again = try await worker.claimOne(maintaining: true)
        #expect(again.job.relativePath == "again.jpg" && again.job.attempt == 1)
        await worker.close()
    }

    /// `queue status`, `queue list` and `queue prune`: counts and IDs the workers' records agree
    /// with, recent jobs kept by an age, old ones deleted.
    static func listStatusPrune(_ kind: ContractQueue) async throws {
        let jobs = try kind.open()
        for name in ["good.jpg", "bad.jpg"] { try await jobs.enqueue(name) }
        let worker = try await jobs.openWorker()
        for _ in 0..<2 {
            let claimed = try await worker.claimOne()
            if claimed.job.relativePath == "good.jpg" {
                #expect(await worker.complete(claimed, result: JobResult(source: "good.jpg", status: .done), notice: nil) == .recorded)
            } else {
                let result = JobResult(source: "bad.jpg", status: .failed, error: ImagePipeError(.corruptImage, "cut short"))
                #expect(await worker.discard(claimed, failure: AttemptRecord(result), result: result, notice: nil) == .recorded)
            }
        }
        let driver = try jobs.driver()
        let overview = try await driver.overview()
        #expect(overview.counts[.done] == 1 && overview.counts[.failed] == 1 && (overview.counts[.waiting] ?? 0) == 0, "\(overview.counts)")
        let done = try await driver.list(.done, limit: 10), failed = try await driver.list(.failed, limit: 10)
        #expect(done.count == 1 && failed.count == 1 && failed.first?.errorCode == "corrupt_image", "\(done) \(failed)")
        #expect(try await driver.list(.waiting, limit: 10).isEmpty)

        #expect(try await driver.prune(olderThan: .seconds(86_400), includingFailed: false).count == 0, "a job finished now is kept")
        #expect(try jobs.places() == ["done": 1, "failed": 1])
        let pruned = try await driver.prune(olderThan: .zero, includingFailed: false)
        #expect(pruned.count >= 1 && pruned.problems.isEmpty, "\(pruned)")
        #expect(try jobs.places()["done"] == nil, "an old done job is deleted")
        await worker.close()
    }

    /// A notice kept with its job's record outlives the worker that kept it: a notifying worker
    /// takes it over once that worker is dead, and once forgotten it is never handed out again.
    static func keptNotice(_ kind: ContractQueue) async throws {
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
            let taken = try await takeNotices(from: [heir], count: 1)
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

    /// What `body` returned or threw.
    static func outcome<T: Sendable>(_ body: () async throws(ImagePipeError) -> T) async -> Result<T, ImagePipeError> {
        do {
            return .success(try await body())
        } catch {
            return .failure(error)
        }
    }

    /// The notices `workers` take over, with upkeep between tries, until `count` came or a minute
    /// passed; then one more round, so a notice handed out twice would show.
    static func takeNotices(from workers: [any JobQueue], count: Int) async throws -> [JobNotice] {
        let deadline = ContinuousClock.now + .seconds(60)
        var taken: [JobNotice] = []
        while taken.count < count && ContinuousClock.now < deadline {
            for worker in workers {
                await worker.maintain()
                taken += await worker.notices?.takeOver(limit: 10) ?? []
            }
            if taken.count < count { try await Task.sleep(for: .milliseconds(100)) }
        }
        for worker in workers {
            await worker.maintain()
            taken += await worker.notices?.takeOver(limit: 10) ?? []
        }
        return taken
    }
}
