import Foundation
import ImagePipeTestSupport
import ImagePipe
@testable import ImagePipePostgres
import ImagePipeQueue
import ImagePipeTestKit
import Logging
import ServiceLifecycle
import PostgresNIO

/// A database of its own on a test server, source files to queue, and loops to run on them.
struct PostgresFixture {
    let server: PostgresServer
    let database: String
    let location: PostgresLocation
    let directory = TemporaryDirectory(prefix: "imagepipe-pg")

    init(server: PostgresServer = .shared, queue: String = "images") throws {
        self.server = server
        database = try server.makeDatabase()
        location = try server.location(database: database, queue: queue)
    }

    /// Writes `count` small source files (``ScriptedCompressor/image(_:)``) and queues them by
    /// absolute path; returns their IDs.
    @discardableResult
    func enqueue(_ count: Int, prefix: String = "photo", unique: Bool = false) async throws -> [Int] {
        let sources = (0..<count).map { directory.write("src/\(prefix)-\($0).jpg", ScriptedCompressor.image("bytes of \(prefix) \($0)")) }
        return try await QueueDatabase.run(location, logger: .quiet) { database throws(ImagePipeError) in
            try await database.enqueue(sources, unique: unique).compactMap { $0 }
        }
    }

    /// Runs SQL on the fixture's database and returns psql's unaligned output.
    func sql(_ statement: String) throws -> String {
        try server.sql(statement, database: database)
    }

    /// Counts jobs by state.
    func states() throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for line in try sql("SELECT state, count(*) FROM imagepipe.jobs GROUP BY state").split(separator: "\n") {
            let parts = line.split(separator: "|")
            if parts.count == 2 { counts[String(parts[0])] = Int(parts[1]) }
        }
        return counts
    }

    /// A queue on the fixture's database (the loop that opens it gives its rule for the jobs of dead workers).
    func queue(lease: Duration = .seconds(30), log: (any LogHandler)? = nil) throws -> PostgresQueue {
        try PostgresQueue(
            location: location, configuration: .init(lease: lease, pollInterval: .milliseconds(200)),
            logger: log.map { handler in Logger(label: "test", factory: { _ in handler }) } ?? .quiet)
    }

    /// A loop over `queue` with a scripted compressor and in-memory storage unless given.
    func loop(
        _ queue: PostgresQueue, compressor: any ImageCompressor = ScriptedCompressor(),
        storage: any StorageRepository = InMemoryStorage(), retry: RetryPolicy = .init(maxAttempts: 3, baseDelay: .milliseconds(50)),
        jobs: Int = 2, storagePause: Duration = .seconds(5)
    ) -> WorkerLoop {
        let handler = FileHandler(
            compressor: compressor, storage: storage, configuration: .init(variants: [try! VariantSpec(parsing: "t=32x32,jpeg,q70")]))
        return WorkerLoop(
            queue: queue, pipeline: JobPipeline(handler: handler, limits: .init(jobs: jobs, uploads: 2)),
            configuration: .init(retry: retry, statusInterval: .zero, fullStoragePause: storagePause), logger: .quiet)
    }

    /// Polls until `condition` holds, without blocking a thread of the cooperative pool.
    func eventually(seconds: Double = 60, _ condition: () throws -> Bool) async rethrows -> Bool {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if try condition() { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return try condition()
    }
}

extension Logger {
    /// A logger that drops everything.
    static let quiet = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
}

/// A loop running in a service group of its own until stopped, as `imagepipe watch` runs it.
struct RunningLoop {
    let loop: WorkerLoop
    let group: ServiceGroup
    let task: Task<Void, Never>

    /// Starts `loop`; a graceful shutdown waits `shutdownTimeout` for jobs in flight, then the
    /// group cancels the loop, which gives them back.
    init(_ loop: WorkerLoop, shutdownTimeout: Duration = .seconds(5)) {
        self.loop = loop
        var configuration = ServiceGroupConfiguration(services: [.init(service: loop)], logger: .quiet)
        configuration.maximumGracefulShutdownDuration = shutdownTimeout
        let group = ServiceGroup(configuration: configuration)
        self.group = group
        // Off the cooperative pool, which synchronous tests running beside this one block.
        task = Task(executorPreference: DispatchTaskExecutor.shared) { try? await group.run() }
    }

    /// Stops it gracefully and waits until it has returned.
    func stop() async {
        await group.triggerGracefulShutdown()
        await task.value
    }
}

/// Runs a blocking call (waiting for a process, running one) on a thread of its own, so that async
/// tests never hold one of the few threads of Swift's cooperative pool that other tests need.
func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}
