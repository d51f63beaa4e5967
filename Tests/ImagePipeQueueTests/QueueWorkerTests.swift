import Foundation
import ImagePipe
import ImagePipeQueue
import Logging
import ImagePipeTestKit
import Synchronization
import Testing

@Suite struct QueueWorkerTests {
    @Test func deliveriesEndInDoneWithTheirRecords() throws {
        let fixture = try QueueFixture()
        fixture.deliver("before-start.jpg")
        let storage = InMemoryStorage()
        let worker = try fixture.worker(storage: storage)
        worker.start()
        fixture.deliver("a.jpg")
        fixture.deliver("2024/trip/b.png")
        #expect(fixture.waitFor { fixture.files("done").count == 6 })
        worker.shutdown()

        #expect(
            fixture.files("done") == [
                "2024/trip/b.png", "2024/trip/b.png.json", "a.jpg", "a.jpg.json", "before-start.jpg", "before-start.jpg.json",
            ])
        #expect(fixture.files("inbox").isEmpty && fixture.files("processing").isEmpty && fixture.files("failed").isEmpty)
        let record = try JSONDecoder().decode(
            JobResult.self, from: Data(contentsOf: URL(fileURLWithPath: fixture.queue.done + "/2024/trip/b.png.json")))
        #expect(record.status == .done && record.source == "2024/trip/b.png")
        #expect(record.variants.map(\.key) == ["2024/trip/b-large.jpg", "2024/trip/b-medium.webp", "2024/trip/b-thumb.webp"])
        #expect(storage.objects["2024/trip/b-thumb.webp"] != nil)
        #expect(worker.statistics.done == 3)
    }

    @Test func ignoredNamesStayInTheInbox() throws {
        let fixture = try QueueFixture()
        let worker = try fixture.worker()
        worker.start()
        for name in ["upload.jpg.part", "x.tmp", "big.jpg.crdownload"] {
            try Data("partial".utf8).write(to: URL(fileURLWithPath: fixture.queue.inbox + "/" + name))
        }
        fixture.deliver("real.jpg")
        #expect(fixture.waitFor { fixture.files("done").count == 2 })
        let rescans = worker.statistics.rescans
        #expect(fixture.waitFor { worker.statistics.rescans >= rescans + 2 }, "two more rescans have seen the partial files")
        worker.shutdown()
        #expect(fixture.files("inbox") == ["big.jpg.crdownload", "upload.jpg.part", "x.tmp"].sorted())
    }

    /// An outage, and a store that refuses (credentials put right while the job waits): both retried.
    @Test(arguments: [
        ImagePipeError(.storageUnavailable, "503 Slow Down"),
        ImagePipeError(.storageRejected, "InvalidAccessKeyId (403): The key does not exist"),
    ])
    func storageFailuresAreRetriedUntilTheyPass(_ failure: ImagePipeError) throws {
        let fixture = try QueueFixture()
        // Every object fails twice, then stores.
        let storage = InMemoryStorage(failing: { _, attempt in attempt <= 2 ? failure : nil })
        let worker = try fixture.worker(storage: storage)
        worker.start()
        fixture.deliver("flaky.jpg")
        #expect(fixture.waitFor { fixture.files("done").contains("flaky.jpg.json") })
        worker.shutdown()
        let record = try JSONDecoder().decode(JobResult.self, from: Data(contentsOf: URL(fileURLWithPath: fixture.queue.done + "/flaky.jpg.json")))
        #expect(record.attempts == 3)
        #expect(record.status == .done)
        #expect(fixture.files("failed").isEmpty)
    }

    @Test func exhaustedRetriesFailWithEveryAttemptsReason() throws {
        let fixture = try QueueFixture()
        let worker = try fixture.worker(storage: InMemoryStorage.alwaysFailing(ImagePipeError(.storageUnavailable, "connection reset")))
        worker.start()
        fixture.deliver("doomed.jpg")
        #expect(fixture.waitFor { fixture.files("failed").contains("doomed.jpg.error.json") })
        worker.shutdown()
        let text = try String(contentsOfFile: fixture.queue.failed + "/doomed.jpg.error.json", encoding: .utf8)
        #expect(
            text.hasPrefix("{\"attempts\":3,\"error\":") && text.filter { $0 == "\n" }.count == 1,
            "one compact line, keys sorted, like done/ records: \(text)")
        let record = try JSONDecoder().decode(FailureRecord.self, from: Data(text.utf8))
        #expect(record.history.allSatisfy { $0.at.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/) != nil }, "\(record.history.map(\.at))")
        #expect(record.attempts == 3)
        #expect(record.history.map(\.attempt) == [1, 2, 3])
        #expect(record.history.allSatisfy { $0.transient && $0.error.contains("connection reset") })
        #expect(fixture.files("failed") == ["doomed.jpg", "doomed.jpg.error.json"])
    }

    @Test func duringAnOutageAWorkerHoldsNoMoreThanItsPipelineTakes() throws {
        let fixture = try QueueFixture()
        let outage = InMemoryStorage.alwaysFailing(ImagePipeError(.storageUnavailable, "connection refused"))
        let slowRetries = QueueWorker.Configuration(
            retry: RetryPolicy(maxAttempts: 5, baseDelay: .seconds(60), maxDelay: .seconds(60)),
            shutdownTimeout: .seconds(5), rescanInterval: .milliseconds(100), statusInterval: .zero)
        let worker = try fixture.worker(storage: outage, pipeline: .init(jobs: 1, uploads: 1), configuration: slowRetries)
        for index in 0..<20 { fixture.deliver("photo-\(index).jpg") }
        worker.start()
        let limit = JobPipeline.Configuration(jobs: 1, uploads: 1).maxInFlight
        #expect(fixture.waitFor { worker.statistics.retrying == limit })
        let rescans = worker.statistics.rescans
        #expect(fixture.waitFor { worker.statistics.rescans >= rescans + 3 }, "several rescans and claim rounds while the jobs are held")
        let held = fixture.files("processing").filter { $0.hasSuffix(".jpg") }
        #expect(held.count == limit, "\(held)")
        #expect(fixture.files("inbox").count == 20 - limit, "the rest stays for other workers")
        worker.shutdown()
        #expect(fixture.files("inbox").count == 20)
    }

    @Test func permanentFailuresAreNotRetried() throws {
        let fixture = try QueueFixture()
        let compressor = ScriptedCompressor(failing: { _ in ImagePipeError(.corruptImage, "corrupt or truncated image data") })
        let worker = try fixture.worker(compressor: compressor)
        worker.start()
        fixture.deliver("bad.jpg")
        #expect(fixture.waitFor { fixture.files("failed").contains("bad.jpg.error.json") })
        worker.shutdown()
        #expect(compressor.calls == ["bad.jpg"])
        let record = try JSONDecoder().decode(
            FailureRecord.self, from: Data(contentsOf: URL(fileURLWithPath: fixture.queue.failed + "/bad.jpg.error.json")))
        #expect(record.errorCode == .corruptImage && record.attempts == 1)
    }

    @Test func shutdownReturnsUnfinishedJobsToTheInbox() throws {
        let fixture = try QueueFixture()
        let compressor = ScriptedCompressor(work: .seconds(3))
        var configuration = QueueWorker.Configuration.fast
        configuration.shutdownTimeout = .milliseconds(200)
        let worker = try fixture.worker(compressor: compressor, configuration: configuration)
        worker.start()
        fixture.deliver("slow.jpg")
        #expect(fixture.waitFor { compressor.calls.count == 1 })
        worker.shutdown()
        #expect(fixture.files("inbox") == ["slow.jpg"])
        #expect(fixture.files("processing").isEmpty)
        #expect(fixture.files("done").isEmpty)
    }

    @Test func aSecondDeliveryOfTheSameBytesUnderTheSameNameWaitsForTheFirstAndIsIdempotent() throws {
        let fixture = try QueueFixture()
        let compressor = ScriptedCompressor(work: .milliseconds(300))
        let storage = InMemoryStorage()
        let worker = try fixture.worker(compressor: compressor, storage: storage)
        worker.start()
        fixture.deliver("same.jpg", "the same bytes")
        #expect(fixture.waitFor { compressor.calls.count == 1 })
        fixture.deliver("same.jpg", "the same bytes")
        #expect(fixture.waitFor { fixture.files("done").count == 4 })
        worker.shutdown()
        #expect(fixture.files("done") == ["same.1.jpg", "same.1.jpg.json", "same.jpg", "same.jpg.json"])
        #expect(fixture.files("failed").isEmpty)
        #expect(storage.objects.count == 3)
    }

    @Test func anotherImageDeliveredUnderTheSameNameFailsWithAKeyCollisionAndLeavesTheFirstsOutputs() throws {
        let fixture = try QueueFixture()
        let compressor = ScriptedCompressor(work: .milliseconds(300))
        let storage = InMemoryStorage()
        let worker = try fixture.worker(compressor: compressor, storage: storage)
        worker.start()
        fixture.deliver("photo.jpg", "blinds")
        #expect(fixture.waitFor { fixture.files("done").count == 2 })
        let before = storage.objects.mapValues(\.body)
        fixture.deliver("photo.jpg", "dune")
        #expect(fixture.waitFor { fixture.files("failed").count == 2 })
        // Delivered together under names that share keys (a.jpg, a.png): one of them fails.
        fixture.deliver("a.jpg", "one picture")
        fixture.deliver("a.png", "another picture")
        #expect(fixture.waitFor { fixture.files("done").count + fixture.files("failed").count == 8 })
        worker.shutdown()

        #expect(storage.objects.filter { $0.key.hasPrefix("photo-") }.mapValues(\.body) == before, "the first image's outputs are untouched")
        let record = try JSONDecoder().decode(
            FailureRecord.self, from: Data(contentsOf: URL(fileURLWithPath: fixture.queue.failed + "/photo.jpg.error.json")))
        #expect(record.errorCode == .keyCollision)
        #expect(record.error.contains("'photo.jpg' changed since output key 'photo-large.jpg' was made from it"), "\(record.error)")
        #expect(try String(contentsOfFile: fixture.queue.failed + "/photo.jpg", encoding: .utf8) == "dune", "the refused original is kept")
        let pair = ["a.jpg", "a.png"]
        #expect(pair.filter { fixture.files("done").contains($0) }.count == 1)
        #expect(pair.filter { fixture.files("failed").contains($0) }.count == 1)
        let winner = try #require(pair.first { fixture.files("done").contains($0) })
        #expect(storage.objects["a-large.jpg"]?.origin?.source == winner, "the key holds the pixels of the job that succeeded")
    }

    @Test func claimsNeverOutrunThePipeline() throws {
        let fixture = try QueueFixture()
        for index in 0..<150 { fixture.deliver("burst/\(index).jpg") }
        let compressor = ScriptedCompressor(work: .milliseconds(2))
        let worker = try fixture.worker(
            compressor: compressor, storage: InMemoryStorage(retainingBodies: false),
            pipeline: .init(jobs: 2, uploads: 2, maxInFlight: 3))
        let maxClaimed = Atomic<Int>(0)
        worker.start()
        let finished = fixture.waitFor {
            // Hidden files are the lock and records being written, not claims.
            let claimed = fixture.files("processing").filter { !($0 as NSString).lastPathComponent.hasPrefix(".") }.count
            var seen = maxClaimed.load(ordering: .relaxed)
            while claimed > seen, !maxClaimed.compareExchange(expected: seen, desired: claimed, ordering: .relaxed).exchanged {
                seen = maxClaimed.load(ordering: .relaxed)
            }
            return fixture.files("done").count == 300
        }
        worker.shutdown()
        #expect(finished)
        #expect(maxClaimed.load(ordering: .relaxed) <= 3, "claimed at most maxInFlight files at once")
        #expect(compressor.maxLiveOutputs <= 3 * 3)
    }
}

@Suite struct ClaimAreaTests {
    @Test func abandonedAreasAreReturnedToTheInboxAndLiveOnesAreNot() throws {
        let fixture = try QueueFixture()
        // A worker that died: its area exists, its lock file is free.
        let dead = fixture.queue.processing + "/deadhost-1-0"
        try FileManager.default.createDirectory(atPath: dead + "/sub", withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: dead + "/.lock", contents: Data())
        try Data("a".utf8).write(to: URL(fileURLWithPath: dead + "/sub/orphan.jpg"))
        // A live worker: its area is locked by this process through another descriptor.
        let live = try ClaimArea(queue: fixture.queue)
        try Data("b".utf8).write(to: URL(fileURLWithPath: live.path + "/mine.jpg"))

        let recovered = ClaimArea.recoverAbandoned(
            in: fixture.queue, except: nil, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        #expect(recovered == ["sub/orphan.jpg"])
        #expect(fixture.files("inbox") == ["sub/orphan.jpg"])
        #expect(!FileManager.default.fileExists(atPath: dead))
        #expect(FileManager.default.fileExists(atPath: live.path + "/mine.jpg"))
    }

    /// A claim area of a worker killed while it was moving files, with its lock free.
    private func deadArea(_ fixture: QueueFixture, holding names: [String]) throws -> String {
        let dead = fixture.queue.processing + "/deadhost-2-0"
        try FileManager.default.createDirectory(atPath: dead, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: dead + "/.lock", contents: Data())
        for name in names { try Data(name.utf8).write(to: URL(fileURLWithPath: dead + "/" + name)) }
        return dead
    }

    @Test func aKillDuringAnyFinishingStepNeverDuplicatesTheJob() throws {
        let fixture = try QueueFixture()
        let dead = try deadArea(fixture, holding: ["recorded.jpg", "linked.jpg", "returning.jpg"])
        // Killed after the original was linked into done/ and its record written, before the release.
        link(dead + "/recorded.jpg", fixture.queue.done + "/recorded.jpg")
        try Data("{}".utf8).write(to: URL(fileURLWithPath: fixture.queue.done + "/recorded.jpg.json"))
        // Killed after the link into done/, while writing the record (staged in the claim area).
        link(dead + "/linked.jpg", fixture.queue.done + "/linked.jpg")
        try Data("{\"sou".utf8).write(to: URL(fileURLWithPath: dead + "/.linked.jpg.json.1234.tmp"))
        // Killed while being returned to the inbox, between link and unlink.
        link(dead + "/returning.jpg", fixture.queue.inbox + "/returning.jpg")

        let recovered = ClaimArea.recoverAbandoned(
            in: fixture.queue, except: nil, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        #expect(recovered.sorted() == ["linked.jpg", "returning.jpg"])
        #expect(fixture.files("inbox") == ["linked.jpg", "returning.jpg"], "nothing under a second name")
        #expect(!FileManager.default.fileExists(atPath: dead))

        // The rerun of the half-finished job completes it under its first name.
        let area = try ClaimArea(queue: fixture.queue)
        guard case .claimed = area.claim(.init("linked.jpg")) else { Issue.record("not claimed"); return }
        let placed = try area.moveOut("linked.jpg", into: fixture.queue.done, record: Data("{}".utf8), suffix: ".json")
        #expect(placed == fixture.queue.done + "/linked.jpg")
        #expect(fixture.files("done") == ["linked.jpg", "linked.jpg.json", "recorded.jpg", "recorded.jpg.json"])
    }

    @Test func ofTwoClaimsOnlyOneWins() throws {
        let fixture = try QueueFixture()
        let first = try ClaimArea(queue: fixture.queue), second = try ClaimArea(queue: fixture.queue)
        fixture.deliver("contested.jpg")
        let outcomes = [first.claim(.init("contested.jpg")), second.claim(.init("contested.jpg"))]
        #expect(outcomes.filter { if case .claimed = $0 { true } else { false } }.count == 1)
        #expect(outcomes.contains(.gone))
    }

    @Test func writerCheckSeesAnOpenWriter() throws {
        let fixture = try QueueFixture()
        let path = fixture.queue.inbox + "/writing.jpg"
        _ = FileManager.default.createFile(atPath: path, contents: Data("x".utf8))
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        #expect(WriterCheck.writers(of: path) == .open)
        try handle.close()
        #expect(WriterCheck.writers(of: path) == .none)
        let reader = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
        #expect(WriterCheck.writers(of: path) == .none, "readers do not count")
        try reader.close()
    }

    @Test func backoffGrowsWithFullJitter() {
        let policy = RetryPolicy(maxAttempts: 5, baseDelay: .seconds(1), maxDelay: .seconds(10))
        #expect(policy.delay(afterAttempt: 1, random: 1) == .seconds(1))
        #expect(policy.delay(afterAttempt: 3, random: 1) == .seconds(4))
        #expect(policy.delay(afterAttempt: 9, random: 1) == .seconds(10))
        #expect(policy.delay(afterAttempt: 3, random: 0) == .zero)
        #expect(policy.shouldRetry(afterAttempt: 4) && !policy.shouldRetry(afterAttempt: 5))
    }
}
