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

    /// Each test case, not the suite around them: a case finds a lane free of the others. A
    /// serialized suite also marks the tests in it (``goesAhead``).
    public func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        if test.isSuite { return test.traits.contains { $0 is ParallelizationTrait } ? self : nil }
        return testCase == nil ? nil : self
    }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        // The suite's own scope: its tests run inside it and so see the mark. (Swift Testing gives
        // a test its suite's `.offThePool` but not its `.serialized`.)
        if test.isSuite {
            try await Self.$goesAhead.withValue(true) { try await function() }
            return
        }
        let lanes = Self.goesAhead ? ProcessTestLanes.shared.ahead : ProcessTestLanes.shared.inTurn
        try await withTaskExecutorPreference(lanes) {
            // A preference moves a task at its next suspension, not at once: without one here, a
            // synchronous test would run to its end on the pool's thread it started on.
            await Task.yield()
            try await function()
        }
    }
}

extension OffThePool {
    /// Whether the running test is a link of a chain: its suite runs its tests one after another
    /// (`.serialized`). Such a test takes the first free lane ahead of the tests queued for one.
    /// In turn, each link of a chain of ten waited behind every test queued when it became ready,
    /// so the chains (sandbox, PostgreSQL watch) ran at the end of the run, one test at a time
    /// beside nothing. Ahead, they finish amid the others (the run's wall time moved little).
    @TaskLocal public static var goesAhead = false
}

extension Trait where Self == OffThePool {
    /// The suite's tests wait for processes on lanes of their own (see ``OffThePool``).
    public static var offThePool: Self { OffThePool() }
}

/// The threads ``OffThePool`` tests run on: `IMAGEPIPE_TEST_LANES` of them, by default twice the
/// cores (at least 4): the tests that drive processes wait more than they compute. They take jobs
/// from one queue, so a test never waits behind another while a thread is free (serial queues
/// taken in turn would put it behind whichever test held its queue). Jobs come in through two
/// executors: ``ahead`` (tests of serialized suites, see ``OffThePool/goesAhead``) and
/// ``inTurn`` (the others); a free lane takes the oldest job of the first before any of the second.
public final class ProcessTestLanes: @unchecked Sendable {
    /// How many tests wait at once.
    public static let width: Int = {
        if let text = ProcessInfo.processInfo.environment["IMAGEPIPE_TEST_LANES"], let width = Int(text), width > 0 { return width }
        return max(4, 2 * ProcessInfo.processInfo.activeProcessorCount)
    }()

    /// The one the tests share.
    public static let shared = ProcessTestLanes(width: width)

    /// The door of the jobs that go ahead, and of those that wait their turn.
    public let ahead: Door
    public let inTurn: Door

    // Guards `jobs`; the threads wait on it. (A Mutex has no condition to wait on.)
    private let condition = NSCondition()
    private var jobs = LaneQueue<UnownedJob>()

    private init(width: Int) {
        ahead = Door(ahead: true)
        inTurn = Door(ahead: false)
        ahead.lanes = self
        inTurn.lanes = self
        for index in 0..<width {
            let thread = Thread { [unowned self] in run() }
            thread.name = "imagepipe.tests.lane.\(index)"
            thread.start()
        }
    }

    /// One way into the lanes' queue: an executor a task can prefer.
    public final class Door: TaskExecutor, @unchecked Sendable {
        let goesAhead: Bool
        // Set once, before any job comes in; the lanes live as long as the process.
        unowned(unsafe) var lanes: ProcessTestLanes!

        init(ahead: Bool) { goesAhead = ahead }

        public func enqueue(_ job: consuming ExecutorJob) {
            lanes.enqueue(UnownedJob(job), ahead: goesAhead)
        }
    }

    private func enqueue(_ job: UnownedJob, ahead: Bool) {
        condition.lock()
        jobs.push(job, ahead: ahead)
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
            var next = jobs.pop()
            while next == nil {
                condition.wait()
                next = jobs.pop()
            }
            condition.unlock()
            // On the executor the job came in through: the one its task prefers.
            let (job, wentAhead) = next!
            job.runSynchronously(on: (wentAhead ? ahead : inTurn).asUnownedTaskExecutor())
        }
    }
}

/// The lanes' queue: the jobs that go ahead, oldest first, then the others, oldest first. A few
/// hundred tests at most wait in it, so removing from the front of an array costs nothing.
public struct LaneQueue<Job> {
    private var ahead: [Job] = []
    private var inTurn: [Job] = []

    public init() {}

    public mutating func push(_ job: Job, ahead goesAhead: Bool) {
        if goesAhead { ahead.append(job) } else { inTurn.append(job) }
    }

    /// The next job, and whether it came in ahead.
    public mutating func pop() -> (Job, wentAhead: Bool)? {
        if !ahead.isEmpty { return (ahead.removeFirst(), true) }
        if !inTurn.isEmpty { return (inTurn.removeFirst(), false) }
        return nil
    }
}
