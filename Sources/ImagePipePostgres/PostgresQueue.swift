// The PostgreSQL queue as a JobQueue: claims with SKIP LOCKED, leases renewed by heartbeats, every update fenced.
import Foundation
public import ImagePipe
public import ImagePipeQueue
public import Logging
import PostgresNIO
import Synchronization

/// Jobs in the table `imagepipe.jobs`, shared by workers on any number of machines.
///
/// A claim is one short autocommit statement: it marks due jobs `running`, counts the attempt and
/// gives this worker a lease until an expiry, skipping rows other workers are claiming at that very
/// moment. No transaction stays open while images are worked on. Heartbeats extend the leases; any
/// worker puts jobs whose lease expired back (one guarded statement, no leader). Every later update
/// names the job's ID, the attempt and this worker as the owner, so a worker that lost a job to
/// another cannot record anything for it.
///
/// LISTEN on `imagepipe_jobs` wakes idle workers when a job is added; a poll every second is the
/// safety net (and picks up retries whose backoff has passed). Lost connections are retried with
/// backoff; jobs whose leases still hold are kept meanwhile.
public final class PostgresQueue: JobQueue {
    /// Queue settings.
    public struct Configuration: Sendable {
        /// How long a claim holds without a heartbeat; renewed every third of it.
        public var lease: Duration
        /// How long done and failed jobs are kept before workers delete them.
        public var retention: Duration
        /// How often a worker looks for due jobs without being woken.
        public var pollInterval: Duration
        /// Whether the worker notifies (`--notify-url`): it keeps each notice with its job's result,
        /// holding it like a claim (renewed at each upkeep, for a lease) until it is delivered, and
        /// takes over the notices whose worker stopped or died.
        public var keepsNotices: Bool

        /// Creates settings: a 30 s lease, 7 days' retention, a poll every second, no notices.
        public init(
            lease: Duration = .seconds(30), retention: Duration = .seconds(7 * 86_400),
            pollInterval: Duration = .seconds(1), keepsNotices: Bool = false
        ) {
            self.lease = lease
            self.retention = retention
            self.pollInterval = pollInterval
            self.keepsNotices = keepsNotices
        }
    }

    /// Where the queue is.
    public let location: PostgresLocation
    /// The settings.
    public let configuration: Configuration
    /// This worker's name as a lease owner.
    public let owner: String
    let database: QueueDatabase
    let logger: Logger
    private let background = Mutex<[Task<Void, Never>]>([])
    private let lastPrune = Mutex<ContinuousClock.Instant?>(nil)
    /// Other workers' leases as first seen by ``remainder(dueWithin:)``, by job and attempt: a lease
    /// that moved since was renewed, so its worker is alive.
    private let leasesSeen = Mutex<[String: Double]>([:])
    /// The worker's rule for jobs whose lease expired, given at opening; none are taken back before.
    private let orphans = Mutex<OrphanRule?>(nil)
    /// Successes that arrive while one statement records others go together in the next.
    private let completions: GroupCommitter<Completion, Settlement>
    /// The notices table, kept with each result when this worker notifies.
    let noticeTable: PostgresNotices

    /// A job's success, waiting to be recorded with others.
    struct Completion: Sendable {
        let id: Int
        let attempt: Int
        let result: String
        let notice: (id: String, body: String)?
    }

    /// Creates the queue's client; nothing is connected until ``open(wake:)``.
    public init(
        location: PostgresLocation, configuration: Configuration = .init(),
        logger: Logger = Logger(label: "imagepipe.queue")
    ) throws(ImagePipeError) {
        self.location = location
        self.configuration = configuration
        self.logger = logger
        self.owner = WorkerIdentity.make()
        let database = try QueueDatabase(location: location, logger: logger)
        self.database = database
        self.noticeTable = PostgresNotices(database: database, queue: location.queue, lease: configuration.lease, logger: logger)
        let owner = self.owner
        let hold = configuration.lease
        self.completions = GroupCommitter(maxBatch: 500) { batch, done in
            Task { done(await database.completeAll(batch, owner: owner, hold: hold)) }
        }
    }

    public var displayName: String { location.description }
    public var releasePlace: String { "queue" }
    public var pollInterval: Duration { configuration.pollInterval }
    public var maintenanceInterval: Duration { max(.seconds(1), configuration.lease / 2) }
    public var heartbeatInterval: Duration? { configuration.lease / 3 }
    /// The notices table, when this worker notifies (``Configuration/keepsNotices``).
    public var notices: (any NoticeStore)? { configuration.keepsNotices ? noticeTable : nil }

    public func open(signals: QueueSignals) async throws(ImagePipeError) {
        orphans.withLock { $0 = signals.orphans }
        let client = database.client
        // Detached: a task started here would inherit the worker's graceful-shutdown handler, and
        // the client (itself a service) would close its connections at the first SIGTERM, before
        // the jobs in flight are recorded. It lives until ``close()``, after the last one.
        background.withLock { $0.append(Task.detached { await client.run() }) }
        try await database.prepare()
        background.withLock { $0.append(Task.detached { await self.database.listen(for: self.location.queue, signals: signals) }) }
        await maintain()
        logger.info("watching", metadata: ["queue": "\(location)", "worker": "\(owner)"])
    }

    public func claim(upTo limit: Int) async -> [ClaimedJob] {
        let rows = await database.claim(queue: location.queue, limit: limit, owner: owner, lease: configuration.lease)
        var claimed: [ClaimedJob] = []
        for row in rows {
            var options = QueuedJobOptions()
            var refusal: ImagePipeError?
            var source = row.source
            if let tooLong = JobSource.refusal(of: row.source) {
                refusal = tooLong
                source = String(row.source.prefix(200)) + "…"
            } else {
                do throws(ImagePipeError) {
                    options = try QueuedJobOptions(json: row.options)
                } catch {
                    refusal = error
                }
            }
            logger.debug("claimed", metadata: ["job": "\(row.id)", "source": "\(source)", "attempt": .stringConvertible(row.attempt)])
            var job = JobSource.job(for: source, attempt: row.attempt, options: options)
            job.earlierDecoderFailures = row.decoderFailures
            // One that cannot run is claimed with its refusal: the worker fails it for good (see ``ClaimedJob/refusal``).
            claimed.append(ClaimedJob(id: String(row.id), job: job, source: source, refusal: refusal))
        }
        return claimed
    }

    public func maintain() async {
        await noticeTable.flushForgotten()
        await noticeTable.renew()
        await database.probe()
        await recoverOrphans()
        let now = ContinuousClock.now
        let due = lastPrune.withLock { last in
            guard last.map({ now - $0 >= .seconds(3600) }) ?? true else { return false }
            last = now
            return true
        }
        if due { _ = await database.prune(queue: location.queue, olderThan: configuration.retention) }
    }

    public func heartbeat(_ jobs: [ClaimedJob]) async -> HeartbeatOutcome {
        // Notices too: heartbeats go on through a stop's drain, when upkeep has ended.
        await noticeTable.renew()
        let fences = jobs.compactMap(Self.fence)
        guard let renewed = await database.renew(fences, owner: owner, lease: configuration.lease) else {
            // The database cannot be reached: keep the jobs; their leases may well still hold.
            return HeartbeatOutcome()
        }
        return HeartbeatOutcome(
            lost: Set(fences.filter { renewed[$0.id] == nil }.map { String($0.id) }),
            cancelRequested: Set(renewed.filter(\.value).map { String($0.key) }))
    }

    public func complete(_ job: ClaimedJob, result: JobResult, notice: JobNotice?) async -> Settlement {
        guard let fence = Self.fence(job) else { return .unrecorded }
        return noticeTable.holding(
            notice,
            await completions.submit(
                Completion(id: fence.id, attempt: fence.attempt, result: result.jsonLine(), notice: kept(notice).map { ($0.id, $0.body) })))
    }

    public func retry(_ job: ClaimedJob, failure: AttemptRecord, after delay: Duration) async -> RetryDisposition {
        guard let fence = Self.fence(job) else { return .unrecorded }
        switch await database.retry(fence, owner: owner, failure: JSONLine.encode(failure), after: delay) {
        case .recorded: return .requeued
        case .leaseLost: return .leaseLost
        case .unrecorded: return .unrecorded
        }
    }

    public func discard(_ job: ClaimedJob, failure: AttemptRecord, result: JobResult, notice: JobNotice?) async -> Settlement {
        guard let fence = Self.fence(job) else { return .unrecorded }
        return noticeTable.holding(
            notice,
            await database.discard(fence, owner: owner, failure: JSONLine.encode(failure), result: result.jsonLine(), notice: kept(notice)))
    }

    public func cancel(_ job: ClaimedJob, failure: AttemptRecord, result: JobResult, notice: JobNotice?) async -> Settlement {
        guard let fence = Self.fence(job) else { return .unrecorded }
        return noticeTable.holding(
            notice,
            await database.cancel(fence, owner: owner, failure: JSONLine.encode(failure), result: result.jsonLine(), notice: kept(notice)))
    }

    /// A notice as the table keeps it, when this worker keeps notices.
    private func kept(_ notice: JobNotice?) -> QueueDatabase.HeldNotice? {
        configuration.keepsNotices ? noticeTable.keep(notice) : nil
    }

    public func release(_ jobs: [ClaimedJob]) async {
        let fences = jobs.compactMap(Self.fence)
        guard !fences.isEmpty else { return }
        await database.release(fences, owner: owner, queue: location.queue)
    }

    public func waitingCount() async -> Int? {
        await database.waitingCount(queue: location.queue)
    }

    /// Fails at once, saying since when and why, while the database is lost (the loop's own
    /// statements and probes notice it coming back); else a fresh connection and a count must answer.
    /// Takes back expired leases first, then counts waiting jobs due within `horizon` and after it,
    /// and the running jobs of other workers whose lease has not been renewed since this worker
    /// first saw it: a live worker renews within a third of its lease, a dead one's lease expires
    /// and its job is taken back, so the wait for them is bounded by the lease.
    public func remainder(dueWithin horizon: Duration) async -> QueueRemainder? {
        let kept = await recoverOrphans()
        guard let state = await database.remainder(queue: location.queue, owner: owner, horizon: horizon) else { return nil }
        let unconfirmed = leasesSeen.withLock { seen in
            // Keyed by job and attempt: a job claimed again is a new claim to watch.
            let current = Dictionary(state.leases.map { ("\($0.id):\($0.attempt)", $0.expires) }, uniquingKeysWith: max)
            seen = seen.filter { current[$0.key] != nil }
            var unconfirmed = 0
            for (key, expires) in current {
                if let first = seen[key] {
                    if expires <= first { unconfirmed += 1 }
                } else {
                    seen[key] = expires
                    unconfirmed += 1
                }
            }
            return unconfirmed
        }
        return QueueRemainder(due: state.due, later: state.later, unconfirmed: unconfirmed, noticesKept: kept)
    }

    public func check() async throws(ImagePipeError) -> Int? {
        if let lost = database.lostReason { throw ImagePipeError(.storageUnavailable, lost) }
        await database.probe()
        if let lost = database.lostReason { throw ImagePipeError(.storageUnavailable, lost) }
        return try await database.checkedWaitingCount(queue: location.queue)
    }

    public func close() async {
        await noticeTable.flushForgotten()
        let tasks = background.withLock { tasks in
            defer { tasks.removeAll() }
            return tasks
        }
        for task in tasks.reversed() { task.cancel() }
        for task in tasks { await task.value }
    }

    /// Settles the jobs whose lease expired as the worker's rule decides (see
    /// ``QueueDatabase/recoverOrphans(queue:rule:)``).
    @discardableResult
    private func recoverOrphans() async -> Int {
        guard let rule = orphans.withLock({ $0 }) else { return 0 }
        let kept = await database.recoverOrphans(queue: location.queue, rule: rule)
        // Only a notifying worker takes them over; one that does not leaves them to one that does.
        return configuration.keepsNotices ? kept : 0
    }

    /// The ID and attempt that fence every update of a claimed job.
    static func fence(_ job: ClaimedJob) -> QueueDatabase.Fence? {
        Int(job.id).map { QueueDatabase.Fence(id: $0, attempt: job.job.attempt) }
    }
}
