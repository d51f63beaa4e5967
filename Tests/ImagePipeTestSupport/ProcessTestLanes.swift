// Tests that wait for processes run on lanes of their own, so the suites that drive the real binary run side by side.
import Foundation
public import Testing

/// Runs each test case of a suite on one of a few serial Dispatch lanes instead of Swift's
/// cooperative pool: `@Suite(.offThePool)`.
///
/// Most tests that drive the real binary are synchronous: they start `imagepipe` (or moto,
/// PostgreSQL, Chromium) and block until it is done. On the cooperative pool each of them holds one
/// of its threads (one per core) for as long as it waits, so on two cores two such tests ran at a
/// time, however much of their time was a process's start-up, a server's, a retry's backoff or a
/// time limit running out. On a lane a test blocks that lane alone: ``width`` of them wait at
/// once, and the pool stays free for the async tests beside them. The width bounds the processes
/// the tests run at a time, so a test's own deadlines keep the margins they were written with.
public struct OffThePool: SuiteTrait, TestTrait, TestScoping {
    /// Given to every test of the suite, nested suites' too, each of which asks for its cases.
    public var isRecursive: Bool { true }

    /// Each test case, not the suite around them: a case finds a lane free of the others.
    public func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        testCase == nil ? nil : self
    }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        try await withTaskExecutorPreference(ProcessTestLanes.shared) {
            // A preference moves a task at its next suspension, not at once: without one here, a
            // synchronous test would run to its end on the pool's thread it started on.
            await Task.yield()
            try await function()
        }
    }
}

extension Trait where Self == OffThePool {
    /// The suite's tests wait for processes on lanes of their own (see ``OffThePool``).
    public static var offThePool: Self { OffThePool() }
}

/// The threads ``OffThePool`` tests run on: `IMAGEPIPE_TEST_LANES` of them, by default twice the
/// cores (at least 4): the tests that drive processes wait more than they compute. They take jobs
/// from one queue, so a test never waits behind another while a thread is free (serial queues
/// taken in turn would put it behind whichever test held its queue).
public final class ProcessTestLanes: TaskExecutor, @unchecked Sendable {
    /// How many tests wait at once.
    public static let width: Int = {
        if let text = ProcessInfo.processInfo.environment["IMAGEPIPE_TEST_LANES"], let width = Int(text), width > 0 { return width }
        return max(4, 2 * ProcessInfo.processInfo.activeProcessorCount)
    }()

    /// The one the tests share.
    public static let shared = ProcessTestLanes(width: width)

    // Guards `jobs`; the threads wait on it. (A Mutex has no condition to wait on.)
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []

    private init(width: Int) {
        for index in 0..<width {
            let thread = Thread { [unowned self] in run() }
            thread.name = "imagepipe.tests.lane.\(index)"
            thread.start()
        }
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    /// Whether the calling thread is one of the lanes.
    public static var isCurrentThreadALane: Bool { Thread.current.threadDictionary[laneKey] != nil }
    private static let laneKey = "imagepipe.tests.lane"

    private func run() {
        Thread.current.threadDictionary[Self.laneKey] = true
        while true {
            condition.lock()
            while jobs.isEmpty { condition.wait() }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
