// A queue as the contract suite's parameter: fresh jobs of its kind, workers' queues on them, its driver, and a look at where its jobs are that goes round the workers.
import Foundation
public import ImagePipe
public import ImagePipeQueue
public import Testing

/// One kind of queue for the contract (``QueueContract``). A new queue is done when every rule
/// holds for it: its test target runs `QueueContract.rules` with its own `ContractQueue`.
public struct ContractQueue: Sendable, CustomTestStringConvertible {
    public let testDescription: String
    /// Where a cancelled job ends (see ``OpenedQueue/places``). PostgreSQL keeps cancelled jobs
    /// apart; a queue directory has no way to ask for a cancel, and files a job a worker cancels
    /// anyway with the failed ones, whose folder `imagepipe retry` empties.
    public var cancelledPlace: String
    /// Whether a job a worker died holding comes back as its next attempt. PostgreSQL counts each
    /// claim. A queue directory keeps deaths in a tally of their own (`.attempts/`), and the next
    /// claim starts the count of a worker's own retries afresh.
    public var countsDeathsAsAttempts: Bool
    /// Opens new, empty jobs of this kind.
    public let open: @Sendable () throws -> OpenedQueue

    public init(
        _ description: String, cancelledPlace: String = "failed", countsDeathsAsAttempts: Bool = false,
        open: @escaping @Sendable () throws -> OpenedQueue
    ) {
        self.testDescription = description
        self.cancelledPlace = cancelledPlace
        self.countsDeathsAsAttempts = countsDeathsAsAttempts
        self.open = open
    }
}

/// Jobs opened for one test: workers' queues on them, the driver the admin commands use, and
/// readers that go round the workers.
public struct OpenedQueue: Sendable {
    /// A new worker's queue on the same jobs (not yet opened), whose claims lapse after `lease`
    /// unless renewed where claims have leases; with `notifies`, as `--notify-url` opens it.
    public let worker: @Sendable (_ lease: Duration, _ notifies: Bool) throws -> any JobQueue
    /// The driver of these jobs, as `imagepipe queue …` opens it.
    public let driver: @Sendable () throws -> any QueueDriver
    /// Adds a job for a source called `name`, as producers add them (a file delivered into the
    /// inbox, `imagepipe enqueue`), with these options (JSON) when given.
    public let enqueue: @Sendable (_ name: String, _ options: String?) async throws -> Void
    /// How many jobs wait, are done, failed and cancelled, as the queue's own files or rows say;
    /// places with none are left out.
    public let places: @Sendable () throws -> [String: Int]
    /// The server's database or the scratch directory, which must outlive the test.
    public let keepAlive: any Sendable

    public init(
        worker: @escaping @Sendable (Duration, Bool) throws -> any JobQueue, driver: @escaping @Sendable () throws -> any QueueDriver,
        enqueue: @escaping @Sendable (String, String?) async throws -> Void, places: @escaping @Sendable () throws -> [String: Int],
        keepAlive: any Sendable
    ) {
        self.worker = worker
        self.driver = driver
        self.enqueue = enqueue
        self.places = places
        self.keepAlive = keepAlive
    }

    /// Adds a job with no options.
    public func enqueue(_ name: String) async throws { try await enqueue(name, nil) }

    /// A worker's queue, opened; the jobs of dead workers get `maxAttempts`, as `watch --max-attempts` gives.
    public func openWorker(lease: Duration = .seconds(30), notifies: Bool = false, maxAttempts: Int = 3) async throws -> any JobQueue {
        let queue = try worker(lease, notifies)
        try await queue.open(wake: {}, maxAttempts: maxAttempts)
        return queue
    }
}

extension JobQueue {
    /// Claims until a job comes, or fails the test after `seconds` (a delivery reaches a queue
    /// directory's worker through its watcher, not at once). With `maintaining`, runs the queue's
    /// upkeep before each try, which takes back the jobs of dead workers.
    public func claimOne(
        seconds: Double = 60, maintaining: Bool = false, sourceLocation: Testing.SourceLocation = #_sourceLocation
    ) async throws -> ClaimedJob {
        let deadline = ContinuousClock.now + .seconds(seconds)
        repeat {
            if maintaining { await maintain() }
            if let job = await claim(upTo: 1).first { return job }
            try await Task.sleep(for: .milliseconds(50))
        } while ContinuousClock.now < deadline
        return try #require(await claim(upTo: 1).first, "no job to claim after \(seconds) s", sourceLocation: sourceLocation)
    }

    /// Runs upkeep until `condition` holds, or fails the test after `seconds` (a lease must lapse first).
    public func maintain(
        until condition: @Sendable () async throws -> Bool, seconds: Double = 60, sourceLocation: Testing.SourceLocation = #_sourceLocation
    ) async throws {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            await maintain()
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        Issue.record("upkeep did not bring it about in \(seconds) s", sourceLocation: sourceLocation)
    }
}
