// The queues the queue contract runs against, each fresh and empty, with a way to see where its jobs are without going through a worker.
import Foundation
import ImagePipe
import ImagePipePostgres
import ImagePipeQueue
import ImagePipeTestSupport
import Testing

/// One implementation of ``JobQueue`` as the contract suite's parameter. A new queue is done when
/// the suite passes with it added to ``all``.
struct ContractQueue: Sendable, CustomTestStringConvertible {
    let testDescription: String
    /// Where a cancelled job ends (see ``OpenedQueue/places``). PostgreSQL keeps cancelled jobs
    /// apart (`queue cancel` asks for it); a queue directory has no way to ask, and files a job a
    /// worker cancels anyway with the failed ones, whose folder `imagepipe retry` empties.
    var cancelledPlace = "failed"
    /// Whether a job a worker died holding comes back as its next attempt. PostgreSQL counts the
    /// lapsed lease as one. A queue directory keeps deaths in a tally of their own (`.attempts/`),
    /// which sets the job aside as `worker_crashed` once `--max-attempts` workers died holding it;
    /// the next claim starts the count of a worker's own retries afresh (AttemptTallyTests).
    var countsDeathsAsAttempts = false
    /// Opens new, empty jobs of this kind.
    let open: @Sendable () throws -> OpenedQueue

    static let all: [ContractQueue] = [directory, postgres]

    /// A queue directory on real files; each worker its own `DirectoryQueue`, as each `watch` is.
    static let directory = ContractQueue(testDescription: "queue directory") {
        let scratch = TemporaryDirectory(prefix: "imagepipe-contract-queue")
        let queue = try QueueDirectory(root: scratch.url("queue"))
        // Files delivered by this process are taken at once; the quiet period is for other users' writes.
        let settings = DirectoryQueue.Configuration(rescanInterval: .milliseconds(200), quietPeriod: .zero, maxAttempts: 3)
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
                return try DirectoryQueue(directory: queue, configuration: settings, logger: .quiet)
            },
            enqueue: { name in scratch.write("queue/inbox/" + name, "bytes of \(name)") },
            places: {
                ["waiting": jobs("inbox"), "done": jobs("done"), "failed": jobs("failed")]
                    .filter { $0.value > 0 }
            },
            keepAlive: scratch)
    }

    /// A PostgreSQL queue on the server the tests start; each worker its own `PostgresQueue`.
    static let postgres = ContractQueue(testDescription: "PostgreSQL", cancelledPlace: "cancelled", countsDeathsAsAttempts: true) {
        let fixture = try PostgresFixture()
        return OpenedQueue(
            worker: { lease, notifies in
                try PostgresQueue(
                    location: fixture.location,
                    configuration: .init(lease: lease, maxAttempts: 3, pollInterval: .milliseconds(200), keepsNotices: notifies),
                    logger: .quiet)
            },
            enqueue: { name in
                // As `imagepipe enqueue` adds it, making the schema on first use.
                let path = fixture.directory.write("src/" + name, "bytes of \(name)")
                _ = try await QueueDatabase.run(fixture.location, logger: .quiet) { database throws(ImagePipeError) in
                    try await database.enqueue([path], unique: false)
                }
            },
            places: {
                var places: [String: Int] = [:]
                for (state, count) in try fixture.states() {
                    let place = ["running": "held"][state] ?? state
                    places[place, default: 0] += count
                }
                // A held job is in no folder of a queue directory: only the other places are compared.
                places["held"] = nil
                return places
            },
            keepAlive: fixture.directory)
    }
}

/// Jobs opened for one test: workers' queues on them, and readers that go round the workers.
struct OpenedQueue: Sendable {
    /// A new worker's queue on the same jobs (not yet opened), whose claims lapse after `lease`
    /// unless renewed where claims have leases; with `notifies`, as `--notify-url` opens it.
    let worker: @Sendable (_ lease: Duration, _ notifies: Bool) throws -> any JobQueue
    /// Adds a job for a source called `name`.
    let enqueue: @Sendable (String) async throws -> Void
    /// How many jobs wait, are done, failed and cancelled, as the queue's own files
    /// or rows say; places with none are left out.
    let places: @Sendable () throws -> [String: Int]
    /// The server's database or the scratch directory, which must outlive the test.
    let keepAlive: any Sendable

    /// A worker's queue, opened.
    func openWorker(lease: Duration = .seconds(30), notifies: Bool = false) async throws -> any JobQueue {
        let queue = try worker(lease, notifies)
        try await queue.open(wake: {})
        return queue
    }
}

extension JobQueue {
    /// Claims until a job comes, or fails the test after `seconds` (a delivery reaches a queue
    /// directory's worker through its watcher, not at once). With `maintaining`, runs the queue's
    /// upkeep before each try, which takes back the jobs of dead workers.
    func claimOne(
        seconds: Double = 60, maintaining: Bool = false, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> ClaimedJob {
        let deadline = ContinuousClock.now + .seconds(seconds)
        repeat {
            if maintaining { await maintain() }
            if let job = await claim(upTo: 1).first { return job }
            try await Task.sleep(for: .milliseconds(50))
        } while ContinuousClock.now < deadline
        return try #require(await claim(upTo: 1).first, "no job to claim after \(seconds) s", sourceLocation: sourceLocation)
    }
}
