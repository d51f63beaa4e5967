// What a worker loop needs from a queue: claim, heartbeat, complete, retry, discard, release.
public import ImagePipe

/// A source of jobs that a ``WorkerLoop`` runs: a queue directory or a PostgreSQL table.
///
/// The loop owns policy (how much to claim, when to retry, what a shutdown gives back); a queue
/// owns where jobs live, how a claim is made safe against other workers, and each job's history
/// of failed attempts. Every method that settles a job is told which claim it settles, so a queue
/// with leases can refuse a worker that lost its claim to another one.
///
/// The methods are called from the loop's tasks on Swift's cooperative pool: a queue whose work
/// blocks (file moves, fsync) runs it through ``BlockingIO``.
public protocol JobQueue: AnyObject, Sendable {
    /// Names the queue in logs (never with secrets).
    var displayName: String { get }
    /// Where released jobs go, for log lines: `inbox`, `queue`.
    var releasePlace: String { get }
    /// How long an idle loop waits for a wake-up before it tries to claim anyway.
    var pollInterval: Duration { get }
    /// How often ``maintain()`` runs: rescans, recovering other workers' abandoned jobs, pruning.
    var maintenanceInterval: Duration { get }
    /// How often the leases of held jobs are renewed; nil when a claim needs no renewal.
    var heartbeatInterval: Duration? { get }

    /// Prepares the queue and starts reporting new work and changed claims through `signals`, whose
    /// calls may come from any thread. From now on, the jobs the queue finds held by dead workers
    /// (at opening, in ``maintain()`` and ``remainder(dueWithin:)``) get the fates
    /// ``QueueSignals/orphans`` decides, a job that ends so keeping its notice as a settled one does.
    func open(signals: QueueSignals) async throws(ImagePipeError)
    /// Claims at most `limit` jobs that are due; fewer (or none) when fewer are there. A job the
    /// queue cannot make a job of (unusable options) comes back with its ``ClaimedJob/refusal``,
    /// claimed like the others: the worker settles it, the queue never does by itself.
    func claim(upTo limit: Int) async -> [ClaimedJob]
    /// Periodic upkeep; see ``maintenanceInterval``.
    func maintain() async
    /// Renews the claims on `jobs`; returns those this worker no longer holds, and those someone
    /// asked to cancel.
    func heartbeat(_ jobs: [ClaimedJob]) async -> HeartbeatOutcome
    /// Records a job's success; with `notice` (the worker notifies, `--notify-url`), keeps the
    /// notice with the record in one step, in its ``notices`` store until forgotten, so the notice
    /// of a recorded job outlives the worker.
    func complete(_ job: ClaimedJob, result: JobResult, notice: JobNotice?) async -> Settlement
    /// Schedules another attempt of a job whose attempt failed for a reason that may pass, adding
    /// `failure` to its history.
    func retry(_ job: ClaimedJob, failure: AttemptRecord, after delay: Duration) async -> RetryDisposition
    /// Records a job's permanent failure: its last attempt's `failure` added to its history, and
    /// the last attempt's result record, and `notice` kept with it as ``complete(_:result:notice:)`` does.
    func discard(_ job: ClaimedJob, failure: AttemptRecord, result: JobResult, notice: JobNotice?) async -> Settlement
    /// Records a job stopped because someone asked to cancel it (see ``HeartbeatOutcome/cancelRequested``):
    /// its attempt's `failure` added to its history, with that attempt's result record. The default,
    /// for queues that never ask, discards it.
    func cancel(_ job: ClaimedJob, failure: AttemptRecord, result: JobResult, notice: JobNotice?) async -> Settlement
    /// Gives jobs back unfinished, for other workers: at a shutdown, or claimed as claiming paused.
    func release(_ jobs: [ClaimedJob]) async
    /// Jobs waiting to be claimed, for the status line; nil when not known.
    func waitingCount() async -> Int?
    /// What is left for a worker about to call the queue empty (`--exit-when-empty`): jobs due now
    /// or within `horizon`, jobs due only later, and jobs other workers hold that may yet come back.
    /// Claims of dead workers that can be taken back now are taken back first. Nil when not known.
    /// The default counts every waiting job as due, for queues whose claims cannot outlive a worker.
    func remainder(dueWithin horizon: Duration) async -> QueueRemainder?
    /// Checks that the queue can be reached now (a readiness check) and returns the jobs waiting,
    /// nil when not known. The default is ``waitingCount()``, for queues that cannot become unreachable.
    ///
    /// - Throws: why the queue cannot be reached.
    func check() async throws(ImagePipeError) -> Int?
    /// Stops reporting work and lets go of the queue; called once, after the last job is settled or released.
    func close() async

    /// Where this queue keeps the notices of recorded jobs (see ``NoticeStore``); nil when it keeps
    /// none (the worker does not notify, or the queue cannot keep them). The default is nil.
    var notices: (any NoticeStore)? { get }
}

extension JobQueue {
    public func remainder(dueWithin horizon: Duration) async -> QueueRemainder? {
        await waitingCount().map { QueueRemainder(due: $0) }
    }

    public func check() async throws(ImagePipeError) -> Int? { await waitingCount() }

    public func cancel(_ job: ClaimedJob, failure: AttemptRecord, result: JobResult, notice: JobNotice?) async -> Settlement {
        await discard(job, failure: failure, result: result, notice: notice)
    }

    public var notices: (any NoticeStore)? { nil }

    /// Opens the queue with only a wake-up for new work, the jobs of dead workers given `maxAttempts`.
    public func open(wake: @escaping @Sendable () -> Void, maxAttempts: Int = RetryPolicy().maxAttempts) async throws(ImagePipeError) {
        try await open(signals: QueueSignals(wake: wake, orphans: OrphanRule(maxAttempts: maxAttempts)))
    }
}

/// How a queue tells its loop that something changed outside it.
public struct QueueSignals: Sendable {
    /// New work may be there (a delivery, an enqueued job): claim.
    public var wake: @Sendable () -> Void
    /// A held job may have changed outside this worker (someone asked to cancel it): renew the
    /// claims now, which reports what changed.
    public var checkClaims: @Sendable () -> Void
    /// What becomes of each job the queue finds held by a worker that died: the worker's rule, the
    /// same for every queue (``WorkerStateMachine/fate(of:retry:)``). The queue only finds them and
    /// carries their fates out.
    public var orphans: OrphanRule

    /// Signals to the loop; `checkClaims` does nothing unless given.
    public init(wake: @escaping @Sendable () -> Void, checkClaims: @escaping @Sendable () -> Void = {}, orphans: OrphanRule) {
        self.wake = wake
        self.checkClaims = checkClaims
        self.orphans = orphans
    }
}

/// What is left in a queue, for a worker that holds nothing and would stop once it is empty.
public struct QueueRemainder: Sendable, Equatable {
    /// Jobs waiting that are due now or within the horizon asked for (retries after their backoff).
    public var due: Int
    /// Jobs waiting for a time past the horizon (delayed when they were queued).
    public var later: Int
    /// Jobs other workers hold whose claims have not shown to be alive since this worker first saw
    /// them: if their worker died, they come back once their lease expires.
    public var unconfirmed: Int
    /// Notices the check kept for jobs it ended (a dead worker's job failed as `worker_crashed`),
    /// or found left by dead workers: a notifying worker takes them over before it calls the queue
    /// empty, or a worker that stops once it is would leave them for the next run.
    public var noticesKept: Int

    /// A remainder; nothing later, nothing unconfirmed and no notice kept by default.
    public init(due: Int, later: Int = 0, unconfirmed: Int = 0, noticesKept: Int = 0) {
        self.due = due
        self.later = later
        self.unconfirmed = unconfirmed
        self.noticesKept = noticesKept
    }
}

/// What renewing the claims found.
public struct HeartbeatOutcome: Sendable, Equatable {
    /// Jobs this worker no longer holds: another worker took them over.
    public var lost: Set<String>
    /// Jobs someone asked to cancel: their work stops at its next safe point and they end cancelled.
    public var cancelRequested: Set<String>

    /// An outcome; nothing lost and nothing to cancel by default.
    public init(lost: Set<String> = [], cancelRequested: Set<String> = []) {
        self.lost = lost
        self.cancelRequested = cancelRequested
    }
}

/// How settling a job went.
public enum Settlement: Sendable, Equatable {
    /// The outcome is recorded.
    case recorded
    /// The worker no longer holds the job (its lease expired and another worker took it): nothing
    /// was recorded, and the result is dropped.
    case leaseLost
    /// The outcome could not be recorded (the queue logged why); the job runs again once its claim
    /// lapses.
    case unrecorded
}

/// What became of a job after ``JobQueue/retry(_:failure:after:)``.
public enum RetryDisposition: Sendable, Equatable {
    /// The worker keeps the job and runs it again itself once the delay has passed (a queue
    /// directory, whose claimed file stays in the worker's claim area).
    case keepHolding
    /// The queue will hand the job out again once the delay has passed, to any worker.
    case requeued
    /// The worker no longer held the job; nothing was recorded.
    case leaseLost
    /// The retry could not be recorded (the queue logged why); the job runs again once its claim lapses.
    case unrecorded
}
