import Foundation
import ImagePipe
@testable import ImagePipePostgres
import ImagePipeQueue
import ImagePipeTestKit
import ImagePipeTestSupport
import Testing

/// Measurements of the PostgreSQL queue, not timed tests: run with
/// `IMAGEPIPE_MEASURE_QUEUE=1 swift test --filter QueueMeasurement` (see the README for the figures).
@Suite(.serialized, .enabled(if: PostgresServer.available && ProcessInfo.processInfo.environment["IMAGEPIPE_MEASURE_QUEUE"] != nil,
                            "a measurement: set IMAGEPIPE_MEASURE_QUEUE=1"))
struct QueueMeasurement {
    /// Claim → done with nothing else to do: a compressor that returns at once, storage in memory,
    /// four workers (each with its own connections), PostgreSQL with fsync on the same cores.
    @Test func overheadThroughClaimAndDone() async throws {
        let server = try PostgresServer(fsync: true)
        let fixture = try PostgresFixture(server: server)
        let count = Int(ProcessInfo.processInfo.environment["IMAGEPIPE_MEASURE_JOBS"] ?? "") ?? 20_000
        try await fixture.enqueue(count)
        let started = ContinuousClock.now
        let loops = try (0..<4).map { _ in
            RunningLoop(fixture.loop(try fixture.queue(), storage: InMemoryStorage(retainingBodies: false), jobs: 2))
        }
        #expect(try await fixture.eventually(seconds: 600) { try fixture.states() == ["done": count] })
        let elapsed = (ContinuousClock.now - started).timeInterval
        for loop in loops { await loop.stop() }
        let span = try fixture.sql("SELECT extract(epoch FROM max(finished_at) - min(started_at)) FROM imagepipe.jobs")
        print("queue overhead: \(count) jobs in \(String(format: "%.2f", elapsed)) s = \(String(format: "%.0f", Double(count) / elapsed)) jobs/s "
              + "(first claim to last done in the database: \(span) s)")
    }

    /// From `imagepipe.enqueue` to the claim, for a worker waiting idle: NOTIFY wakes it.
    @Test func idlePickupLatency() async throws {
        let server = try PostgresServer(fsync: true)
        let fixture = try PostgresFixture(server: server)
        let running = RunningLoop(fixture.loop(try fixture.queue()))
        try await Task.sleep(for: .seconds(1))
        for index in 0..<200 {
            try await fixture.enqueue(1, prefix: "idle-\(index)")
            try await Task.sleep(for: .milliseconds(30))
        }
        #expect(try await fixture.eventually { try fixture.states() == ["done": 200] })
        await running.stop()
        let latencies = try fixture.sql("SELECT extract(epoch FROM started_at - created_at) * 1000 FROM imagepipe.jobs ORDER BY 1")
            .split(separator: "\n").compactMap { Double($0) }
        let median = latencies[latencies.count / 2], max = latencies.last ?? 0
        print("idle pickup latency over \(latencies.count) jobs: median \(String(format: "%.2f", median)) ms, max \(String(format: "%.2f", max)) ms")
    }
}
