import Foundation
import ImagePipe
import ImagePipeQueue
import ImagePipeTestKit
import ImagePipeTestSupport
import Logging
import ServiceLifecycle
import ServiceLifecycleTestKit
import Synchronization

/// A queue directory in a scratch folder, and helpers to deliver files and run a worker on it.
struct QueueFixture {
    let directory = TemporaryDirectory(prefix: "imagepipe-queue")
    let queue: QueueDirectory

    init() throws {
        queue = try QueueDirectory(root: directory.url("queue"))
    }

    /// Delivers the safe way: written under a hidden name, then renamed into place. The file is one
    /// the scripted compressor takes: an image's first bytes, then `contents`.
    func deliver(_ relative: String, _ contents: String = "image bytes") {
        InboxDelivery.deliver(ScriptedCompressor.image(contents), to: queue.inbox, as: relative)
    }

    /// Delivers a file that is no image the same way (`NAME.options.json`, ...), its text as given.
    func deliverText(_ relative: String, _ text: String) {
        InboxDelivery.deliver(Data(text.utf8), to: queue.inbox, as: relative)
    }

    /// Runs a worker on this queue directory for as long as `body` runs, as production does: a
    /// ``WorkerLoop`` in a `ServiceGroup`, shut down gracefully through service-lifecycle's test kit.
    func withWorker(
        compressor: any ImageCompressor = ScriptedCompressor(), storage: any StorageRepository = InMemoryStorage(),
        pipeline: Capacity.Limits = .init(jobs: 2, uploads: 2), configuration: WorkerLoop.Configuration = .fast,
        directory settings: DirectoryQueue.Configuration = .fast, log: CapturedLog? = nil,
        _ body: (RunningWorker) async throws -> Void
    ) async throws {
        let logger =
            log.map { log in Logger(label: "test", factory: { _ in log }) }
            ?? Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        let handler = FileHandler(compressor: compressor, storage: storage, logger: logger)
        let queue = try DirectoryQueue(directory: queue, configuration: settings, logger: logger)
        let loop = WorkerLoop(
            queue: queue, pipeline: JobPipeline(handler: handler, limits: pipeline), configuration: configuration, logger: logger)
        try await RunningWorker.run(loop, directory: queue, body)
    }

    func files(_ sub: String) -> [String] { directory.files(under: "queue/" + sub) }
}

/// A worker loop running in a service group, and what a test does with it.
struct RunningWorker: Sendable {
    let loop: WorkerLoop
    let directory: DirectoryQueue?
    let trigger: GracefulShutdownTestTrigger
    let running: Task<Void, any Error>

    /// Runs `loop` in a service group while `body` runs, then shuts it down gracefully (unless
    /// `body` has stopped it already) and waits for it.
    static func run(
        _ loop: WorkerLoop, directory: DirectoryQueue? = nil, maximumGracefulShutdownDuration: Duration? = nil,
        _ body: (RunningWorker) async throws -> Void
    ) async throws {
        // Off the cooperative pool, which synchronous tests running beside this one block.
        try await withTaskExecutorPreference(DispatchTaskExecutor.shared) {
            try await runInGroup(loop, directory: directory, maximumGracefulShutdownDuration: maximumGracefulShutdownDuration, body)
        }
    }

    private static func runInGroup(
        _ loop: WorkerLoop, directory: DirectoryQueue?, maximumGracefulShutdownDuration: Duration?,
        _ body: (RunningWorker) async throws -> Void
    ) async throws {
        try await testGracefulShutdown { trigger in
            var configuration = ServiceGroupConfiguration(
                services: [.init(service: loop, successTerminationBehavior: .gracefullyShutdownGroup)],
                logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
            configuration.maximumGracefulShutdownDuration = maximumGracefulShutdownDuration
            let group = ServiceGroup(configuration: configuration)
            // An unstructured task does not inherit the executor preference: it is given again.
            let running = Task(executorPreference: DispatchTaskExecutor.shared) { try await group.run() }
            let worker = RunningWorker(loop: loop, directory: directory, trigger: trigger, running: running)
            do {
                try await body(worker)
            } catch {
                running.cancel()
                _ = try? await running.value
                throw error
            }
            try await worker.shutdown()
        }
    }

    /// Counts so far.
    var statistics: WorkerLoop.Statistics { loop.statistics }

    /// Deliveries the queue directory has seen and not claimed.
    var waiting: Int { directory?.pendingCount ?? 0 }

    /// Starts a graceful shutdown, as the first SIGTERM does.
    func beginShutdown() {
        trigger.triggerGracefulShutdown()
    }

    /// Shuts down gracefully and waits until the worker has stopped.
    func shutdown() async throws {
        trigger.triggerGracefulShutdown()
        try await running.value
    }
}

extension WorkerLoop.Configuration {
    /// Short delays so retry tests stay quick.
    static let fast = WorkerLoop.Configuration(
        retry: RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(20), maxDelay: .milliseconds(100)), statusInterval: .zero)
}

extension DirectoryQueue.Configuration {
    /// Frequent rescans so tests of what a rescan finds stay quick.
    static let fast = DirectoryQueue.Configuration(rescanInterval: .milliseconds(200))
}

/// A log handler that keeps every message, for tests of what a worker logs.
struct CapturedLog: LogHandler {
    private let lines = Arc()
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let line = "\(event.level) \(event.message)"
        let fields = (event.metadata ?? [:]).mapValues { "\($0)" }
        lines.storage.withLock { $0.append((line, fields)) }
    }

    /// Every message so far, as `level message`.
    var messages: [String] { lines.storage.withLock { $0.map(\.line) } }

    /// The metadata of every message `message` (as `level message`) so far, each value as text.
    func metadata(of message: String) -> [[String: String]] {
        lines.storage.withLock { $0.filter { $0.line == message }.map(\.fields) }
    }

    private final class Arc: Sendable {
        let storage = Mutex<[(line: String, fields: [String: String])]>([])
    }
}
