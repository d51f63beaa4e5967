import Foundation
import ImagePipe
import ImagePipeQueue
import ImagePipeTestKit
import ImagePipeTestSupport
import Logging
import Synchronization

/// A queue directory in a scratch folder, and helpers to deliver files and wait for outcomes.
struct QueueFixture {
    let directory = TemporaryDirectory(prefix: "imagepipe-queue")
    let queue: QueueDirectory

    init() throws {
        queue = try QueueDirectory(root: directory.url("queue"))
    }

    /// Delivers the safe way: written under a hidden name, then renamed into place.
    func deliver(_ relative: String, _ contents: String = "image bytes") {
        InboxDelivery.deliver(Data(contents.utf8), to: queue.inbox, as: relative)
    }

    func worker(
        compressor: any ImageCompressor = ScriptedCompressor(), storage: any StorageRepository = InMemoryStorage(),
        pipeline: JobPipeline.Configuration = .init(jobs: 2, uploads: 2),
        configuration: QueueWorker.Configuration = .fast, log: CapturedLog? = nil
    ) throws -> QueueWorker {
        let handler = FileHandler(compressor: compressor, storage: storage)
        let logger =
            log.map { log in Logger(label: "test", factory: { _ in log }) }
            ?? Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        return try QueueWorker(
            queue: queue, pipeline: JobPipeline(handler: handler, configuration: pipeline),
            configuration: configuration, logger: logger)
    }

    func files(_ sub: String) -> [String] { directory.files(under: "queue/" + sub) }

    /// Polls until `condition` holds (see ``eventually(seconds:_:)``).
    @discardableResult
    func waitFor(seconds: Double = 30, _ condition: () -> Bool) -> Bool {
        eventually(seconds: seconds, condition)
    }
}

extension QueueWorker.Configuration {
    /// Short delays so retry tests stay quick.
    static let fast = QueueWorker.Configuration(
        retry: RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(20), maxDelay: .milliseconds(100)),
        shutdownTimeout: .seconds(5), rescanInterval: .milliseconds(200), statusInterval: .zero)
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
        lines.storage.withLock { $0.append("\(event.level) \(event.message)") }
    }

    /// Every message so far, as `level message`.
    var messages: [String] { lines.storage.withLock { $0 } }

    private final class Arc: Sendable {
        let storage = Mutex<[String]>([])
    }
}
