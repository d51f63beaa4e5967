import Foundation
import ImagePipe
@testable import ImagePipeQueue
import ImagePipeTestKit
import Logging
import Synchronization
import Testing

/// How much a worker claims: past its pipeline's room while finished jobs only wait for their
/// outputs' fsyncs, up to three times it, but never more retries than that room.
@Suite struct WorkerLoopClaimTests {
    /// The pipeline the loops run: room for 3 jobs (one compressor, one upload).
    private static let pipelineRoom = 3

    @Test func jobsWaitingForTheirOutputsToBeDurableLetTheWorkerClaimMore() async throws {
        let queue = MemoryQueue(jobs: (1...40).map { "\($0).jpg" })
        let storage = DeferredStorage()
        let loop = makeLoop(queue, storage: storage)
        let running = Task { try await loop.run() }
        // Every put waits, so no job is recorded, yet the worker goes on past its pipeline's room,
        // up to three times it, and no further.
        let limit = 3 * Self.pipelineRoom
        #expect(await until { queue.claimedIDs.count == limit && storage.waiting == 3 * limit })
        try await Task.sleep(for: .milliseconds(200))
        #expect(queue.claimedIDs.count == limit, "held: \(queue.claimedIDs.count)")
        #expect(queue.completed.isEmpty, "no job recorded before its outputs are")
        // Reported, they are recorded and the rest of the queue follows.
        #expect(
            await until {
                storage.reportAll()
                return queue.completed.count == 40
            })
        try await stop(loop, running, reporting: storage)
    }

    @Test func anOutageHoldsNoMoreRetriesThanThePipelineHasRoom() async throws {
        let queue = MemoryQueue(jobs: (1...40).map { "\($0).jpg" }, holdsRetries: true)
        let storage = InMemoryStorage(failing: { _, _ in ImagePipeError(.storageUnavailable, "503 Service Unavailable") })
        let loop = makeLoop(queue, storage: storage)
        let running = Task { try await loop.run() }
        #expect(await until { loop.statistics.retrying == Self.pipelineRoom })
        // Nothing else is claimed: the jobs stay in the queue for other workers.
        try await Task.sleep(for: .milliseconds(200))
        #expect(queue.claimedIDs.count == Self.pipelineRoom, "claimed during the outage: \(queue.claimedIDs)")
        #expect(loop.statistics.retrying == Self.pipelineRoom && queue.completed.isEmpty)
        loop.beginStopping()
        try await running.value
    }

    @Test func aHandedOffJobWhoseFsyncsFailCountsAgainstThePipelineOnceItsResultComes() async throws {
        // Puts taken, then three jobs' reported failed and the others' stored: those three wait for
        // a retry and fill the pipeline's room like any other retries, so nothing more is claimed.
        let queue = MemoryQueue(jobs: (1...40).map { "\($0).jpg" }, holdsRetries: true)
        let storage = DeferredStorage()
        let loop = makeLoop(queue, storage: storage)
        let running = Task { try await loop.run() }
        #expect(await until { queue.claimedIDs.count == 3 * Self.pipelineRoom && storage.waiting == 27 })
        let failing = Set(queue.claimedIDs.prefix(Self.pipelineRoom).map { String($0.dropLast(4)) + "-" })
        storage.reportAll(failing: { key in
            failing.contains { key.hasPrefix($0) } ? ImagePipeError(.storageUnavailable, "fsync: Input/output error") : nil
        })
        #expect(await until { loop.statistics.retrying == Self.pipelineRoom && queue.completed.count == 6 })
        try await Task.sleep(for: .milliseconds(200))
        #expect(queue.claimedIDs.count == 3 * Self.pipelineRoom, "no claims while the retries fill the pipeline's room")
        try await stop(loop, running, reporting: storage)
    }

    /// Stops the loop, reporting whatever puts wait meanwhile, so a failed expectation above cannot
    /// leave jobs the drain would wait for.
    private func stop(_ loop: WorkerLoop, _ running: Task<Void, any Error>, reporting storage: DeferredStorage) async throws {
        let reporter = Task {
            while !Task.isCancelled {
                storage.reportAll()
                try? await Task.sleep(for: .milliseconds(5))
            }
        }
        loop.beginStopping()
        try await running.value
        reporter.cancel()
    }

    @Test func retriesDueWithNoRoomWaitForItWithoutSpinning() async throws {
        // Nine handed-off jobs fail at once; their retries come due together, three times the
        // pipeline's room, and each takes a while to compress. The loop runs what fits and waits
        // for room for the rest, woken as it comes back, instead of looking again and again.
        let queue = MemoryQueue(jobs: (1...9).map { "\($0).jpg" }, holdsRetries: true)
        let storage = DeferredStorage()
        let clock = ManualClock()
        let loop = makeLoop(queue, storage: storage, clock: clock, compressor: ScriptedCompressor(work: .milliseconds(100)))
        let running = Task { try await loop.run() }
        #expect(await until { queue.claimedIDs.count == 9 && storage.waiting == 27 })
        storage.reportAll(failing: { _ in ImagePipeError(.storageUnavailable, "fsync: Input/output error") })
        #expect(await until { loop.statistics.retrying == 9 })
        let looks = loop.claimLooks
        clock.advance(by: .seconds(7200))
        #expect(await until { storage.waiting == 27 }, "every retry ran")
        #expect(loop.claimLooks - looks < 200, "the loop looked \(loop.claimLooks - looks) times while retries waited for room")
        #expect(
            await until {
                storage.reportAll()
                return queue.completed.count == 9
            })
        try await stop(loop, running, reporting: storage)
    }

    private func makeLoop(
        _ queue: MemoryQueue, storage: any StorageRepository, clock: ManualClock = ManualClock(),
        compressor: ScriptedCompressor = ScriptedCompressor()
    ) -> WorkerLoop {
        let handler = FileHandler(compressor: compressor, storage: storage)
        let pipeline = JobPipeline(handler: handler, configuration: .init(jobs: 1, uploads: 1))
        precondition(pipeline.configuration.maxInFlight == Self.pipelineRoom)
        return WorkerLoop(
            queue: queue, pipeline: pipeline,
            configuration: .init(
                retry: RetryPolicy(maxAttempts: 5, baseDelay: .seconds(3600), maxDelay: .seconds(3600)),
                shutdownTimeout: .seconds(5), statusInterval: .zero),
            clock: clock, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
    }

    /// Polls a condition the loop reaches by itself (real work on real threads).
    private func until(_ condition: () -> Bool) async -> Bool {
        for _ in 0..<3000 {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return condition()
    }
}
