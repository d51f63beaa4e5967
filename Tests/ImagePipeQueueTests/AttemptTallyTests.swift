// A queue directory's count of the workers that died holding a job and of its decoder failures, on real files.
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import ImagePipe
@testable import ImagePipeQueue
import ImagePipeTestKit
import ImagePipeTestSupport
import Logging
import Testing

@Suite struct AttemptTallyTests {
    let silent = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

    /// The tally file of the original at `path`, read as it is on disk; nil when there is none.
    func tally(_ fixture: QueueFixture, _ path: String) -> AttemptTally? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        let file = fixture.queue.root + "/.attempts/\(info.st_ino).json"
        return FileManager.default.contents(atPath: file).flatMap { try? JSONDecoder().decode(AttemptTally.self, from: $0) }
    }

    func failure(_ fixture: QueueFixture, _ name: String) throws -> FailureRecord {
        try JSONDecoder().decode(FailureRecord.self, from: Data(contentsOf: URL(fileURLWithPath: fixture.queue.failed + "/" + name + ".error.json")))
    }

    /// A worker that claims `names` and dies holding them: its area's lock goes with the area, as with
    /// the process of a worker killed. Returns the area's name.
    func workerDies(_ fixture: QueueFixture, holding names: [String]) throws -> String {
        let area = try ClaimArea(queue: fixture.queue)
        for name in names {
            guard case .claimed = area.claim(.init(name)) else {
                Issue.record("\(name) was not claimed")
                return area.id
            }
        }
        return area.id
    }

    @Test func eachWorkerThatDiesHoldingAJobCountsOnceAndTheLastAllowedSetsItAside() throws {
        let fixture = try QueueFixture()
        fixture.deliverText("a.jpg.options.json", #"{"focus": [0.3, 0.7]}"#)
        fixture.deliver("a.jpg")
        fixture.deliver("b.jpg")
        var workers: [String] = []
        for round in 1...3 {
            workers.append(try workerDies(fixture, holding: round == 1 ? ["a.jpg", "b.jpg"] : ["a.jpg"]))
            let recovery = ClaimArea.recoverAbandoned(in: fixture.queue, except: nil, orphans: OrphanRule(maxAttempts: 3), logger: silent)
            #expect(fixture.files("processing").isEmpty, "the dead worker's area is gone: \(fixture.files("processing"))")
            if round < 3 {
                #expect(recovery.jobs.sorted() == (round == 1 ? ["a.jpg", "b.jpg"] : ["a.jpg"]) && recovery.setAside.isEmpty)
                #expect(fixture.files("inbox") == ["a.jpg", "a.jpg.options.json", "b.jpg"])
                let counted = try #require(tally(fixture, fixture.queue.inbox + "/a.jpg"))
                #expect(counted.workerDeaths == round && counted.deaths.map(\.worker) == workers && counted.source == "a.jpg")
            }
        }
        let recovery = ClaimArea.recoverAbandoned(in: fixture.queue, except: nil, orphans: OrphanRule(maxAttempts: 3), logger: silent)
        #expect(recovery.jobs.isEmpty && recovery.setAside.isEmpty, "nothing is left to take over")
        // The third death sets it aside: in failed/ with its options, not back in the inbox.
        #expect(fixture.files("inbox") == ["b.jpg"])
        #expect(fixture.files("failed") == ["a.jpg", "a.jpg.error.json", "a.jpg.options.json"])
        let record = try failure(fixture, "a.jpg")
        #expect(record.errorCode == .workerCrashed && record.attempts == 3 && record.result.errorCode == .workerCrashed)
        #expect(
            record.error == "3 workers died holding this job, the last \(workers[2]) (--max-attempts 3): it is set aside rather than given to another"
        )
        #expect(record.history.map(\.attempt) == [1, 2, 3] && record.history.map(\.transient) == [true, true, false])
        #expect(record.history.map(\.error) == workers.map { "the worker \($0) died holding the job" })
        #expect(tally(fixture, fixture.queue.failed + "/a.jpg") == nil, "a finished job's tally is removed")
        #expect(tally(fixture, fixture.queue.inbox + "/b.jpg")?.workerDeaths == 1, "b was held by one worker that died")
        // Listed as any discarded job is, with its code and reason.
        let listed = try #require(fixture.queue.jobs(in: .failed).first)
        #expect(listed.attempts == 3 && listed.errorCode == "worker_crashed" && listed.error == record.error)
    }

    @Test func aTakeOverCutShortCountsItsDeadWorkerOnceWhenItIsDoneAgain() throws {
        let fixture = try QueueFixture()
        fixture.deliver("a.jpg")
        fixture.deliver("b.jpg")
        let first = try workerDies(fixture, holding: ["a.jpg"])
        _ = ClaimArea.recoverAbandoned(in: fixture.queue, except: nil, orphans: OrphanRule(maxAttempts: 2), logger: silent)
        let second = try workerDies(fixture, holding: ["a.jpg", "b.jpg"])
        let area = fixture.queue.processing + "/" + second
        // The worker taking the area over was killed after counting both, and midway through setting
        // a.jpg aside: linked into failed/, its record not written.
        let counted = try ["a.jpg", "b.jpg"].map { name in
            try AttemptLedger.countDeath(of: second, holding: area + "/" + name, named: name, in: fixture.queue).workerDeaths
        }
        #expect(counted == [2, 1])
        #expect(link(area + "/a.jpg", fixture.queue.failed + "/a.jpg") == 0)

        let recovery = ClaimArea.recoverAbandoned(in: fixture.queue, except: nil, orphans: OrphanRule(maxAttempts: 2), logger: silent)
        #expect(recovery.jobs == ["b.jpg"] && recovery.setAside == ["a.jpg"], "\(recovery)")
        #expect(try failure(fixture, "a.jpg").attempts == 2, "set aside, its deaths counted once each")
        #expect(
            try failure(fixture, "a.jpg").history.map(\.error) == [
                "the worker \(first) died holding the job", "the worker \(second) died holding the job",
            ])
        #expect(fixture.files("failed") == ["a.jpg", "a.jpg.error.json"], "the same entry completed, no second name")
        #expect(tally(fixture, fixture.queue.inbox + "/b.jpg")?.workerDeaths == 1)
        #expect(fixture.files("inbox") == ["b.jpg"] && fixture.files("processing").isEmpty)
    }

    @Test func aWorkerThatStopsGivesItsJobsBackUncountedAndTheyKeepWhatWasCounted() async throws {
        let fixture = try QueueFixture()
        fixture.deliver("a.jpg")
        fixture.deliver("b.jpg")
        let died = try workerDies(fixture, holding: ["a.jpg"])
        _ = ClaimArea.recoverAbandoned(in: fixture.queue, except: nil, logger: silent)
        let queue = try DirectoryQueue(directory: fixture.queue, logger: silent)
        try await queue.open(wake: {}, maxAttempts: 2)
        let jobs = await queue.claim(upTo: 5)
        #expect(jobs.map(\.id) == ["a.jpg", "b.jpg"])
        // A stop gives them back: nothing counted, nothing forgotten.
        await queue.release(jobs)
        await queue.close()
        #expect(fixture.files("inbox") == ["a.jpg", "b.jpg"] && fixture.files("processing").isEmpty)
        #expect(tally(fixture, fixture.queue.inbox + "/a.jpg")?.deaths.map(\.worker) == [died])
        #expect(tally(fixture, fixture.queue.inbox + "/b.jpg") == nil)

        // Done, its tally goes with its claim.
        let next = try DirectoryQueue(directory: fixture.queue, logger: silent)
        try await next.open(wake: {}, maxAttempts: 2)
        for job in await next.claim(upTo: 5) {
            #expect(await next.complete(job, result: JobResult(source: job.id, status: .done), notice: nil) == .recorded)
        }
        await next.close()
        #expect(fixture.files("done") == ["a.jpg", "a.jpg.json", "b.jpg", "b.jpg.json"])
        #expect((try? FileManager.default.contentsOfDirectory(atPath: fixture.queue.root + "/.attempts")) == [])
    }

    @Test func aTallyIsNotTakenForAnotherFileThatGetsItsInodeNumber() throws {
        let fixture = try QueueFixture()
        fixture.deliver("a.jpg")
        let area = try workerDies(fixture, holding: ["a.jpg"])
        _ = ClaimArea.recoverAbandoned(in: fixture.queue, except: nil, logger: silent)
        let path = fixture.queue.inbox + "/a.jpg"
        #expect(tally(fixture, path)?.workerDeaths == 1)
        #expect(AttemptLedger.tally(of: path, in: fixture.queue)?.deaths.map(\.worker) == [area])
        // Another file under the same inode number would not have the same modification time.
        var times = [timespec(tv_sec: 1_000_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000_000, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, path, &times, AT_SYMLINK_NOFOLLOW) == 0)
        #expect(AttemptLedger.tally(of: path, in: fixture.queue) == nil)
        let counted = try AttemptLedger.countDeath(of: "another-1-0", holding: path, named: "a.jpg", in: fixture.queue)
        #expect(counted.workerDeaths == 1 && counted.deaths.map(\.worker) == ["another-1-0"], "counted from the start")
    }

    @Test func retrySendsAJobSetAsideBackForANewStart() throws {
        let fixture = try QueueFixture()
        fixture.deliver("a.jpg")
        _ = try workerDies(fixture, holding: ["a.jpg"])
        #expect(ClaimArea.recoverAbandoned(in: fixture.queue, except: nil, orphans: OrphanRule(maxAttempts: 1), logger: silent).setAside == ["a.jpg"])
        #expect(try failure(fixture, "a.jpg").error.hasPrefix("1 worker died holding this job"))
        #expect(try FailedJobs(queue: fixture.queue).retry(["a.jpg"]) == [.returned(from: "failed/a.jpg", to: "inbox/a.jpg")])
        #expect(tally(fixture, fixture.queue.inbox + "/a.jpg") == nil)
        _ = try workerDies(fixture, holding: ["a.jpg"])
        let recovery = ClaimArea.recoverAbandoned(in: fixture.queue, except: nil, orphans: OrphanRule(maxAttempts: 2), logger: silent)
        #expect(recovery.jobs == ["a.jpg"] && recovery.setAside.isEmpty, "one death since the retry")
    }

    @Test func aWorkerThatNotifiesTellsOfAJobItSetsAsideAsDiscarded() async throws {
        let fixture = try QueueFixture()
        fixture.deliver("a.jpg")
        _ = try workerDies(fixture, holding: ["a.jpg"])
        let queue = try DirectoryQueue(directory: fixture.queue, configuration: .init(takesOverNotices: true), logger: silent)
        try await queue.open(wake: {}, maxAttempts: 1)
        let notices = await queue.notices?.takeOver(limit: 10) ?? []
        #expect(notices.map(\.event) == [.failed] && notices.first?.job == "a.jpg")
        #expect(notices.first?.result.errorCode == .workerCrashed)
        #expect(fixture.files("failed") == ["a.jpg", "a.jpg.error.json"])
        await queue.notices?.forget(notices.map(\.id))
        await queue.close()
    }

    // MARK: - Decoder failures

    @Test func aDecoderFailureIsCountedInTheJobsTallyAndItsNextClaimKnowsIt() async throws {
        let fixture = try QueueFixture()
        fixture.deliver("a.jpg")
        let first = try DirectoryQueue(directory: fixture.queue, logger: silent)
        try await first.open(wake: {})
        var claimed = try #require(await first.claim(upTo: 1).first)
        #expect(claimed.job.earlierDecoderFailures == 0)
        func failure(_ code: ImagePipeError.Code) -> AttemptRecord {
            AttemptRecord(JobResult(source: "a.jpg", status: .failed, error: ImagePipeError(code, "it failed")))
        }
        #expect(await first.retry(claimed, failure: failure(.storageUnavailable), after: .zero) == .keepHolding)
        #expect(tally(fixture, first.area.pathOf("a.jpg")) == nil, "a storage failure is not counted there")
        #expect(await first.retry(claimed, failure: failure(.jobTimeout), after: .zero) == .keepHolding)
        #expect(tally(fixture, first.area.pathOf("a.jpg"))?.decoderFailures == 1)
        // The worker stops while the job waits for its retry: back in the inbox, the count with it.
        await first.release([claimed])
        await first.close()
        let second = try DirectoryQueue(directory: fixture.queue, logger: silent)
        try await second.open(wake: {})
        claimed = try #require(await second.claim(upTo: 1).first)
        #expect(claimed.job.earlierDecoderFailures == 1 && claimed.job.attempt == 1)
        #expect(await second.retry(claimed, failure: failure(.decoderCrashed), after: .zero) == .keepHolding)
        #expect(tally(fixture, second.area.pathOf("a.jpg"))?.decoderFailures == 2)
        let discarded = JobResult(source: "a.jpg", status: .failed, error: ImagePipeError(.decoderCrashed, "it failed"))
        #expect(await second.discard(claimed, failure: AttemptRecord(discarded), result: discarded, notice: nil) == .recorded)
        #expect(tally(fixture, fixture.queue.failed + "/a.jpg") == nil, "removed with the job's record")
        await second.close()
    }

    @Test func aJobWhoseDecoderFailsTwiceFailsAfterTwoAttemptsNotAfterEveryAttemptAllowed() async throws {
        let fixture = try QueueFixture()
        let compressor = ScriptedCompressor(failing: { name in
            name.hasPrefix("crashing")
                ? ImagePipeError(.decoderCrashed, "the decoder's helper died of SIGSEGV")
                : ImagePipeError(.jobTimeout, "the image work ran past --job-timeout (30 s)")
        })
        let retries = WorkerLoop.Configuration(
            retry: RetryPolicy(maxAttempts: 5, baseDelay: .milliseconds(20), maxDelay: .milliseconds(100)), statusInterval: .zero)
        try await fixture.withWorker(compressor: compressor, configuration: retries) { _ in
            fixture.deliver("crashing.jpg")
            fixture.deliver("slow.jpg")
            #expect(await eventually { fixture.files("failed").count == 4 }, "\(fixture.files("failed"))")
        }
        for (name, code) in [("crashing.jpg", ImagePipeError.Code.decoderCrashed), ("slow.jpg", .jobTimeout)] {
            let record = try failure(fixture, name)
            #expect(record.errorCode == code && record.attempts == 2 && record.history.map(\.errorCode) == [code, code], "\(name)")
        }
        #expect(compressor.calls.count == 4, "two attempts each of the five --max-attempts allows")
        #expect((try? FileManager.default.contentsOfDirectory(atPath: fixture.queue.root + "/.attempts")) == [])
    }
}
