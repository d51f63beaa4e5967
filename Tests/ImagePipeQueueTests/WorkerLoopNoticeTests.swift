// The worker loop's notices on an in-memory queue: kept with each record, forgotten once settled, left at a stop, taken over at start.
import Foundation
import ImagePipe
import ImagePipeQueue
import ImagePipeTestKit
import ImagePipeTestSupport
import Logging
import Synchronization
import Testing

/// What the loop asks of the queue's outbox around the notifier, without any HTTP: the notifier
/// here delivers every notice at once except those of the jobs it is told to hold.
@Suite struct WorkerLoopNoticeTests {
    @Test func noticesAreKeptWithTheirRecordsUntilSettledAndTheUndeliveredAreLeftForTheNextWorker() async throws {
        let queue = MemoryQueue(jobs: ["a.jpg", "b.jpg", "broken.jpg"])
        // A worker that died left a notice its queue kept: this one sends it before any job.
        let orphan = JobNotice(event: .done, job: "earlier.jpg", result: JobResult(source: "earlier.jpg", status: .done))
        queue.leaveOrphans([orphan])
        let notifier = HoldingNotifier(holding: ["b.jpg"])
        let storage = InMemoryStorage(failing: { object, _ in
            object.key.hasPrefix("broken") ? ImagePipeError(.storageRejected, "403 Forbidden") : nil
        })
        let handler = FileHandler(compressor: ScriptedCompressor(), storage: storage)
        let loop = WorkerLoop(
            queue: queue, pipeline: JobPipeline(handler: handler, limits: .init(jobs: 1, uploads: 1)),
            configuration: .init(statusInterval: .zero, exitWhenEmpty: true, shutdownTimeout: .zero),
            clock: ManualClock(), notifier: notifier, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        try await RunningWorker.run(loop) { worker in
            try await worker.running.value
        }
        let sent = notifier.sent
        #expect(sent.first == orphan, "the taken-over notice goes first")
        #expect(Set(sent.map(\.job)) == ["earlier.jpg", "a.jpg", "b.jpg", "broken.jpg"])
        #expect(sent.first { $0.job == "broken.jpg" }?.event == .failed)
        // Each sent notice was kept by the queue when its job was recorded (the orphan before).
        let held = try #require(sent.first { $0.job == "b.jpg" })
        #expect(queue.kept.keys.sorted() == [held.id], "the delivered ones forgotten, the held one kept")
        #expect(queue.left == [held.id], "and left for the next worker at the stop")
    }

    @Test func aWorkerWithoutANotifierKeepsNoNoticeAndTakesNoneOver() async throws {
        let queue = MemoryQueue(jobs: ["a.jpg"])
        let orphan = JobNotice(event: .done, job: "earlier.jpg", result: JobResult(source: "earlier.jpg", status: .done))
        queue.leaveOrphans([orphan])
        let handler = FileHandler(compressor: ScriptedCompressor(), storage: InMemoryStorage())
        let loop = WorkerLoop(
            queue: queue, pipeline: JobPipeline(handler: handler, limits: .init(jobs: 1, uploads: 1)),
            configuration: .init(statusInterval: .zero, exitWhenEmpty: true), clock: ManualClock(),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        try await RunningWorker.run(loop) { worker in
            try await worker.running.value
        }
        #expect(queue.completed == ["a.jpg"])
        #expect(queue.kept.keys.sorted() == [orphan.id], "only the orphan, still there for a worker that notifies")
    }
}

/// Records every notice and settles it at once, except those of the jobs named, which stay
/// undelivered until ``finish(within:)`` returns them.
final class HoldingNotifier: JobNotifier {
    private let state = Mutex<(sent: [JobNotice], held: [String])>(([], []))
    private let holding: Set<String>

    init(holding: Set<String>) { self.holding = holding }

    var sent: [JobNotice] { state.withLock { $0.sent } }

    func send(_ notice: JobNotice, settled: (@Sendable (String) -> Void)?) async {
        state.withLock { state in
            state.sent.append(notice)
            if holding.contains(notice.job) { state.held.append(notice.id) }
        }
        if !holding.contains(notice.job) { settled?(notice.id) }
    }

    func trySend(_ notice: JobNotice, settled: (@Sendable (String) -> Void)?) -> Bool {
        state.withLock { state in
            state.sent.append(notice)
            if holding.contains(notice.job) { state.held.append(notice.id) }
        }
        if !holding.contains(notice.job) { settled?(notice.id) }
        return true
    }

    var room: Int { 256 }

    func finish(within limit: Duration) async -> [String] { state.withLock { $0.held } }
}
