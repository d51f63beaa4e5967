// The queue contract on a queue directory: real files, each worker its own DirectoryQueue, in the fast tier.
import Foundation
import ImagePipe
import ImagePipeQueue
import ImagePipeQueueContract
import ImagePipeTestSupport
import Logging
import Testing

extension ContractQueue {
    /// A queue directory on real files; each worker its own `DirectoryQueue`, as each `watch` is.
    static let directory = ContractQueue("queue directory") {
        let scratch = TemporaryDirectory(prefix: "imagepipe-contract-queue")
        let root = scratch.url("queue")
        _ = try QueueDirectory(root: root)
        let quiet = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        // Files delivered by this process are taken at once; the quiet period is for other users' writes.
        let settings = DirectoryQueue.Configuration(rescanInterval: .milliseconds(200), quietPeriod: .zero)
        // A job is its source file; its records (`NAME.json`, `NAME.error.json`) are beside it.
        @Sendable func jobs(_ folder: String) -> Int {
            scratch.files(under: "queue/" + folder).filter { !$0.hasSuffix(".json") && !$0.hasPrefix(".") }.count
        }
        return OpenedQueue(
            // A queue directory has no lease: a worker's claims last as long as its process holds
            // its claim area's lock.
            worker: { _, notifies in
                var settings = settings
                settings.takesOverNotices = notifies
                return try DirectoryQueue(directory: QueueDirectory(root: root), configuration: settings, logger: quiet)
            },
            driver: { try DirectoryDriver(root, creating: false, logger: quiet) },
            enqueue: { name, options in
                // Options first: a producer writes them before the original, which a worker may take at once.
                if let options { _ = scratch.write("queue/inbox/" + JobOptionsFile.name(of: name), options) }
                _ = scratch.write("queue/inbox/" + name, "bytes of \(name)")
            },
            places: { ["waiting": jobs("inbox"), "done": jobs("done"), "failed": jobs("failed")].filter { $0.value > 0 } },
            keepAlive: scratch)
    }
}

/// Every rule of the queue contract, on a queue directory.
@Suite struct DirectoryQueueContractTests {
    @Test(arguments: QueueContract.rules)
    func holds(_ rule: QueueRule) async throws {
        try await rule.check(.directory)
    }
}
