import Foundation
import ImagePipe
import ImagePipeQueue
import ImagePipeTestKit
import Logging
import Synchronization
import Testing

/// How much a worker claims: past its pipeline's room while finished jobs only wait for their
/// outputs' fsyncs, but never more retries than that room.
@Suite struct WorkerLoopClaimTests {
    /// The pipeline the loops run: room for 3 jobs (one compressor, one upload).
    private static let pipelineRoom = 3

    @Test func jobsWaitingForTheirOutputsToBeDurableLetTheWorkerClaimMore() async throws {
        let queue = MemoryQueue(jobs: (1...40).map { "\($0).jpg" })
        let storage = DeferredStorage()
        let loop = makeLoop(queue, storage: storage)
        let running = Task { try await loop.run() }
        // Every put waits, so no job is recorded, yet the worker goes on past its pipeline's room.
        #expect(await until { queue.claimedIDs.count >= 2 * Self.pipelineRoom && storage.waiting == 3 * queue.claimedIDs.count })
        try await Task.sleep(for: .milliseconds(100))
        #expect(queue.completed.isEmpty, "no job recorded before its outputs are")
        #expect(queue.claimedIDs.count <= 4 * Self.pipelineRoom, "held: \(queue.claimedIDs.count)")
        // Reported, they are recorded and the rest of the queue follows.
        #expect(
            await until {
                storage.reportAll()
                return queue.completed.count == 40
            })
        loop.beginStopping()
        try await running.value
    }

    @Test func anOutageHoldsNoMoreRetriesThanThePipelineHasRoom() async throws {
        let queue = MemoryQueue(jobs: (1...40).map { "\($0).jpg" }, holdsRetries: true)
        let storage = InMemoryStorage(failing: { _, _ in ImagePipeError(.storageUnavailable, "503 Service Unavailable") })
        let loop = makeLoop(queue, storage: storage)
        let running = Task { try await loop.run() }
        #expect(
            await until {
                let retrying = loop.statistics.retrying
                return retrying >= Self.pipelineRoom && retrying == queue.claimedIDs.count
            })
        // Claiming has stopped: the jobs running when it did may join the retries, but the rest
        // stay in the queue for other workers.
        let held = queue.claimedIDs.count
        try await Task.sleep(for: .milliseconds(200))
        #expect(queue.claimedIDs.count == held && held < 2 * Self.pipelineRoom, "claimed during the outage: \(queue.claimedIDs)")
        #expect(queue.completed.isEmpty)
        loop.beginStopping()
        try await running.value
    }

    private func makeLoop(_ queue: MemoryQueue, storage: any StorageRepository) -> WorkerLoop {
        let handler = FileHandler(compressor: ScriptedCompressor(), storage: storage)
        let pipeline = JobPipeline(handler: handler, configuration: .init(jobs: 1, uploads: 1))
        precondition(pipeline.configuration.maxInFlight == Self.pipelineRoom)
        return WorkerLoop(
            queue: queue, pipeline: pipeline,
            configuration: .init(
                retry: RetryPolicy(maxAttempts: 5, baseDelay: .seconds(3600), maxDelay: .seconds(3600)),
                shutdownTimeout: .seconds(5), statusInterval: .zero),
            clock: ManualClock(), logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
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
