import Foundation
import ImagePipe
@testable import ImagePipePostgres
import ImagePipeQueue
import ImagePipeTestKit
import ImagePipeTestSupport
import Testing

/// Measurements of the PostgreSQL queue, not timed tests: run with
/// `IMAGEPIPE_MEASURE_QUEUE=1 swift test --filter QueueMeasurement` (see the README for the figures).
@Suite(
    .serialized,
    .enabled(
        if: PostgresServer.tool.path != nil && ProcessInfo.processInfo.environment["IMAGEPIPE_MEASURE_QUEUE"] != nil,
        "a measurement: set IMAGEPIPE_MEASURE_QUEUE=1"))
struct QueueMeasurement {
    /// Claim → done with nothing else to do: a compressor that returns at once, storage in memory,
    /// four workers (each with its own connections), PostgreSQL with fsync on the same cores.
    @Test func overheadThroughClaimAndDone() async throws {
        let server = try PostgresServer(fsync: true)
        let fixture = try PostgresFixture(server: server)
        let count = Int(ProcessInfo.processInfo.environment["IMAGEPIPE_MEASURE_JOBS"] ?? "") ?? 20_000
        try await fixture.enqueue(count)
        let cpuBefore = (worker: CPUTime.ofThisProcess(), database: CPUTime.ofServer(server))
        let started = ContinuousClock.now
        let loops = try (0..<4).map { _ in
            RunningLoop(fixture.loop(try fixture.queue(), storage: InMemoryStorage(retainingBodies: false), jobs: 2))
        }
        // Counted in process: a psql every 50 ms would cost this process a fork each time.
        let deadline = ContinuousClock.now + .seconds(600)
        while loops.reduce(0, { $0 + $1.loop.statistics.done }) < count, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        let elapsed = (ContinuousClock.now - started).timeInterval
        let workerCPU = CPUTime.ofThisProcess() - cpuBefore.worker, databaseCPU = CPUTime.ofServer(server) - cpuBefore.database
        for loop in loops { await loop.stop() }
        #expect(try fixture.states() == ["done": count])
        let span = try fixture.sql("SELECT extract(epoch FROM max(finished_at) - min(started_at)) FROM imagepipe.jobs")
        print(
            "queue overhead: \(count) jobs in \(String(format: "%.2f", elapsed)) s = \(String(format: "%.0f", Double(count) / elapsed)) jobs/s "
                + "(first claim to last done in the database: \(span) s); CPU per job: workers "
                + String(format: "%.3f", workerCPU * 1000 / Double(count)) + " ms, PostgreSQL "
                + String(format: "%.3f", databaseCPU * 1000 / Double(count)) + " ms")
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

/// CPU time (user and system, in seconds) from /proc: this process's, and a test server's (its
/// postmaster and the processes it started: backends, WAL writer, checkpointer).
enum CPUTime {
    static func ofThisProcess() -> Double { seconds(pid: "self") ?? 0 }

    static func ofServer(_ server: PostgresServer) -> Double {
        guard let pidFile = try? String(contentsOfFile: server.root + "/data/postmaster.pid", encoding: .utf8),
            let postmaster = pidFile.split(separator: "\n").first.map(String.init)
        else { return 0 }
        var total = seconds(pid: postmaster) ?? 0
        for pid in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] where Int(pid) != nil {
            if fields(pid: pid).map({ $0[1] == postmaster }) ?? false { total += seconds(pid: pid) ?? 0 }
        }
        return total
    }

    /// The fields of /proc/PID/stat after the command name: state, ppid, … (utime and stime are 11 and 12).
    private static func fields(pid: String) -> [String]? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        return stat[stat.index(after: close)...].split(separator: " ").map(String.init)
    }

    private static func seconds(pid: String) -> Double? {
        guard let fields = fields(pid: pid), fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}
