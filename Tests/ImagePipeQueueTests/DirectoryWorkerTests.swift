import Foundation
import ImagePipe
import ImagePipeQueue
import ImagePipeTestKit
import ImagePipeTestSupport
import Logging
import Synchronization
import Testing

/// Workers on a queue directory: a WorkerLoop over a DirectoryQueue in a service group, on real files.
@Suite struct DirectoryWorkerTests {
    @Test func deliveriesEndInDoneWithTheirRecords() async throws {
        let fixture = try QueueFixture()
        fixture.deliver("before-start.jpg")
        let storage = InMemoryStorage()
        try await fixture.withWorker(storage: storage) { worker in
            fixture.deliver("a.jpg")
            fixture.deliver("2024/trip/b.png")
            #expect(await eventually { fixture.files("done").count == 6 })
            try await worker.shutdown()
            #expect(worker.statistics.done == 3)
        }
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
    }

    @Test func ignoredNamesStayInTheInbox() async throws {
        let fixture = try QueueFixture()
        try await fixture.withWorker { worker in
            for name in ["upload.jpg.part", "x.tmp", "big.jpg.crdownload"] {
                try Data("partial".utf8).write(to: URL(fileURLWithPath: fixture.queue.inbox + "/" + name))
            }
            fixture.deliver("real.jpg")
            #expect(await eventually { fixture.files("done").count == 2 })
            let rescans = worker.statistics.upkeeps
            #expect(await eventually { worker.statistics.upkeeps >= rescans + 2 }, "two more rescans have seen the partial files")
        }
        #expect(fixture.files("inbox") == ["big.jpg.crdownload", "upload.jpg.part", "x.tmp"].sorted())
    }

    /// An outage, and a store that refuses (credentials put right while the job waits): both retried.
    @Test(arguments: [
        ImagePipeError(.storageUnavailable, "503 Slow Down"),
        ImagePipeError(.storageRejected, "InvalidAccessKeyId (403): The key does not exist"),
    ])
    func storageFailuresAreRetriedUntilTheyPass(_ failure: ImagePipeError) async throws {
        let fixture = try QueueFixture()
        // Every object fails twice, then stores.
        let storage = InMemoryStorage(failing: { _, attempt in attempt <= 2 ? failure : nil })
        try await fixture.withWorker(storage: storage) { _ in
            fixture.deliver("flaky.jpg")
            #expect(await eventually { fixture.files("done").contains("flaky.jpg.json") })
        }
        let record = try JSONDecoder().decode(JobResult.self, from: Data(contentsOf: URL(fileURLWithPath: fixture.queue.done + "/flaky.jpg.json")))
        #expect(record.attempts == 3)
        #expect(record.status == .done)
        #expect(fixture.files("failed").isEmpty)
    }

    @Test func exhaustedRetriesFailWithEveryAttemptsReason() async throws {
        let fixture = try QueueFixture()
        try await fixture.withWorker(storage: InMemoryStorage.alwaysFailing(ImagePipeError(.storageUnavailable, "connection reset"))) { _ in
            fixture.deliver("doomed.jpg")
            #expect(await eventually { fixture.files("failed").contains("doomed.jpg.error.json") })
        }
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

    @Test func duringAnOutageAWorkerHoldsNoMoreThanItsPipelineHasRoomFor() async throws {
        let fixture = try QueueFixture()
        let outage = InMemoryStorage.alwaysFailing(ImagePipeError(.storageUnavailable, "connection refused"))
        let slowRetries = WorkerLoop.Configuration(
            retry: RetryPolicy(maxAttempts: 5, baseDelay: .seconds(60), maxDelay: .seconds(60)), statusInterval: .zero)
        for index in 0..<20 { fixture.deliver("photo-\(index).jpg") }
        let limits = Capacity.Limits(jobs: 1, uploads: 1)
        try await fixture.withWorker(
            storage: outage, pipeline: limits, configuration: slowRetries, directory: .init(rescanInterval: .milliseconds(100))
        ) { worker in
            #expect(await eventually { worker.statistics.retrying == limits.room })
            let rescans = worker.statistics.upkeeps
            let looks = worker.statistics.looks
            #expect(
                await eventually { worker.statistics.upkeeps >= rescans + 3 && worker.statistics.looks >= looks + 3 },
                "several rescans and looks for work while the jobs are held")
            let held = fixture.files("processing").filter { $0.hasSuffix(".jpg") }
            #expect(held.count == limits.room, "\(held)")
            #expect(fixture.files("inbox").count == 20 - limits.room, "the rest stays for other workers")
        }
        #expect(fixture.files("inbox").count == 20)
    }

    @Test func permanentFailuresAreNotRetried() async throws {
        let fixture = try QueueFixture()
        let compressor = ScriptedCompressor(failing: { _ in ImagePipeError(.corruptImage, "corrupt or truncated image data") })
        try await fixture.withWorker(compressor: compressor) { _ in
            fixture.deliver("bad.jpg")
            #expect(await eventually { fixture.files("failed").contains("bad.jpg.error.json") })
        }
        #expect(compressor.calls == ["bad.jpg"])
        let record = try JSONDecoder().decode(
            FailureRecord.self, from: Data(contentsOf: URL(fileURLWithPath: fixture.queue.failed + "/bad.jpg.error.json")))
        #expect(record.errorCode == .corruptImage && record.attempts == 1)
    }

    @Test func theServiceGroupsDeadlineReturnsUnfinishedJobsToTheInbox() async throws {
        let fixture = try QueueFixture()
        // Far longer than the deadline, however loaded the machine: the job cannot finish first. The
        // worker gives it back without waiting for it, so the test does not wait either.
        let compressor = ScriptedCompressor(work: .seconds(60))
        let log = CapturedLog()
        let handler = FileHandler(compressor: compressor, storage: InMemoryStorage())
        let queue = try DirectoryQueue(directory: fixture.queue, configuration: .fast)
        let loop = WorkerLoop(
            queue: queue, pipeline: JobPipeline(handler: handler, limits: .init(jobs: 1, uploads: 1)), configuration: .fast,
            logger: Logger(label: "test", factory: { _ in log }))
        // The group, not the worker, owns the graceful shutdown's deadline: past it, it cancels the worker.
        try await RunningWorker.run(loop, directory: queue, maximumGracefulShutdownDuration: .milliseconds(200)) { worker in
            fixture.deliver("slow.jpg")
            #expect(await eventually { compressor.calls.count == 1 })
            try await worker.shutdown()
        }
        #expect(fixture.files("inbox") == ["slow.jpg"])
        #expect(fixture.files("processing").isEmpty)
        #expect(fixture.files("done").isEmpty)
        #expect(log.messages.contains("warning shutdown timeout: returned the unfinished jobs"), "\(log.messages)")
    }

    /// The first signal finishes what has started and gives back what only waited for its turn,
    /// so other workers can take it at once.
    @Test func aGracefulShutdownFinishesTheJobUnderWayAndReturnsTheClaimedOnesNotStarted() async throws {
        let fixture = try QueueFixture()
        // Held until the stop has reached the worker: the first job is still under way then, however
        // loaded the machine, and the two behind it have not started.
        let compressor = ScriptedCompressor(held: true)
        let log = CapturedLog()
        for index in 0..<3 { fixture.deliver("photo-\(index).jpg") }
        // One compression at a time and a room of three: one job compresses, two wait for it.
        try await fixture.withWorker(compressor: compressor, pipeline: .init(jobs: 1, uploads: 1), log: log) { worker in
            #expect(await eventually { compressor.calls.count == 1 && fixture.files("processing").count { $0.hasSuffix(".jpg") } == 3 })
            let stopping = Task { try await worker.shutdown() }
            let stopped = await eventually { log.messages.contains { $0.hasPrefix("notice shutting down") } }
            #expect(stopped, "the stop reaches the worker while a job is under way: \(log.messages)")
            compressor.letOneThrough()
            try await stopping.value
        }
        #expect(compressor.calls.count == 1, "only the job under way was compressed: \(compressor.calls)")
        let done = fixture.files("done").filter { $0.hasSuffix(".jpg") }
        #expect(done == compressor.calls, "the job under way finished")
        #expect(fixture.files("inbox").count == 2, "the two not started are back: \(fixture.files("inbox"))")
        #expect(fixture.files("processing").isEmpty && fixture.files("failed").isEmpty)
        let returned = log.metadata(of: "info shutting down: returned a job that had not started")
        #expect(returned.count == 2, "\(log.messages)")
        // Each line names the job it gave back.
        #expect(Set(returned.compactMap { $0["job"] }) == Set(fixture.files("inbox")), "\(returned)")
    }

    @Test func aSecondDeliveryOfTheSameBytesUnderTheSameNameWaitsForTheFirstAndIsIdempotent() async throws {
        let fixture = try QueueFixture()
        let compressor = ScriptedCompressor(work: .milliseconds(300))
        let storage = InMemoryStorage()
        try await fixture.withWorker(compressor: compressor, storage: storage) { _ in
            fixture.deliver("same.jpg", "the same bytes")
            #expect(await eventually { compressor.calls.count == 1 })
            fixture.deliver("same.jpg", "the same bytes")
            #expect(await eventually { fixture.files("done").count == 4 })
        }
        #expect(fixture.files("done") == ["same.1.jpg", "same.1.jpg.json", "same.jpg", "same.jpg.json"])
        #expect(fixture.files("failed").isEmpty)
        #expect(storage.objects.count == 3)
    }

    @Test func anotherImageDeliveredUnderTheSameNameFailsWithAKeyCollisionAndLeavesTheFirstsOutputs() async throws {
        let fixture = try QueueFixture()
        let compressor = ScriptedCompressor(work: .milliseconds(300))
        let storage = InMemoryStorage()
        let before = Mutex<[String: Data]>([:])
        try await fixture.withWorker(compressor: compressor, storage: storage) { _ in
            fixture.deliver("photo.jpg", "blinds")
            #expect(await eventually { fixture.files("done").count == 2 })
            before.withLock { $0 = storage.objects.mapValues(\.body) }
            fixture.deliver("photo.jpg", "dune")
            #expect(await eventually { fixture.files("failed").count == 2 })
            // Delivered together under names that share keys (a.jpg, a.png): one of them fails.
            fixture.deliver("a.jpg", "one picture")
            fixture.deliver("a.png", "another picture")
            #expect(await eventually { fixture.files("done").count + fixture.files("failed").count == 8 })
        }
        #expect(
            storage.objects.filter { $0.key.hasPrefix("photo-") }.mapValues(\.body) == before.withLock { $0 },
            "the first image's outputs are untouched")
        let record = try JSONDecoder().decode(
            FailureRecord.self, from: Data(contentsOf: URL(fileURLWithPath: fixture.queue.failed + "/photo.jpg.error.json")))
        #expect(record.errorCode == .keyCollision)
        #expect(record.error.contains("'photo.jpg' changed since output key 'photo-large.jpg' was made from it"), "\(record.error)")
        #expect(
            FileManager.default.contents(atPath: fixture.queue.failed + "/photo.jpg") == ScriptedCompressor.image("dune"),
            "the refused original is kept")
        let pair = ["a.jpg", "a.png"]
        #expect(pair.filter { fixture.files("done").contains($0) }.count == 1)
        #expect(pair.filter { fixture.files("failed").contains($0) }.count == 1)
        let winner = try #require(pair.first { fixture.files("done").contains($0) })
        #expect(storage.objects["a-large.jpg"]?.origin?.source == winner, "the key holds the pixels of the job that succeeded")
    }

    @Test func claimsNeverOutrunThePipeline() async throws {
        let fixture = try QueueFixture()
        for index in 0..<150 { fixture.deliver("burst/\(index).jpg") }
        let compressor = ScriptedCompressor(work: .milliseconds(2))
        let maxClaimed = Atomic<Int>(0)
        // A synchronous store: nothing waits for durability, so the room alone bounds the claims.
        let limits = Capacity.Limits(jobs: 2, uploads: 2, room: 3, handedOff: 6)
        try await fixture.withWorker(compressor: compressor, storage: InMemoryStorage(retainingBodies: false), pipeline: limits) { _ in
            let finished = await eventually {
                // Hidden files are the lock and records being written, not claims.
                let claimed = fixture.files("processing").filter { !($0 as NSString).lastPathComponent.hasPrefix(".") }.count
                var seen = maxClaimed.load(ordering: .relaxed)
                while claimed > seen, !maxClaimed.compareExchange(expected: seen, desired: claimed, ordering: .relaxed).exchanged {
                    seen = maxClaimed.load(ordering: .relaxed)
                }
                return fixture.files("done").count == 300
            }
            #expect(finished)
        }
        #expect(maxClaimed.load(ordering: .relaxed) <= 3, "claimed at most the room's files at once")
        #expect(compressor.maxLiveOutputs <= 3 * 3)
    }
}
