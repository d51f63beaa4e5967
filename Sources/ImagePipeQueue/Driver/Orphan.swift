// A job whose worker died holding it, as a queue found it; the worker's state machine says what becomes of it.
public import ImagePipe

/// A job a queue found held by a worker that is gone: a queue directory's abandoned claim area, a
/// PostgreSQL lease that expired. The queue reports what it knows; what becomes of the job is
/// decided by one rule for every queue (``WorkerStateMachine/fate(of:retry:)``), which the loop
/// hands the queue when it opens it (``QueueSignals/orphans``). The queue carries the fate out
/// as it settles any job: a job that ends keeps its notice with its record, in one step.
public struct Orphan: Sendable, Equatable {
    /// What becomes of the job.
    public enum Fate: Sendable, Equatable {
        /// It waits again for any worker, the death recorded in its history.
        case retry
        /// It ends failed, `worker_crashed`: workers keep dying with it, or it used up its attempts.
        case fail
        /// Someone asked to cancel it: it ends cancelled.
        case cancel
    }

    /// The queue's id of the job (a path relative to the inbox, a row's ID).
    public var id: String
    /// Its source, as its result record names it.
    public var source: String
    /// The attempts it has had that count towards `--max-attempts`, the dead worker's included. A
    /// queue directory counts the workers that died holding the job (``AttemptLedger``); PostgreSQL
    /// counts every claim.
    public var attempts: Int
    /// The worker that held it last.
    public var worker: String
    /// Whether someone asked to cancel it.
    public var cancelRequested: Bool

    /// An orphan as a queue found it.
    public init(id: String, source: String, attempts: Int, worker: String, cancelRequested: Bool = false) {
        self.id = id
        self.source = source
        self.attempts = attempts
        self.worker = worker
        self.cancelRequested = cancelRequested
    }

    /// The dead worker's attempt, as the job's history records it: `worker_crashed`, final when the
    /// job ends with it.
    public func failure(final: Bool, at: String = JSONLine.timestamp()) -> AttemptRecord {
        AttemptRecord(attempt: attempts, error: "the worker \(worker) died holding the job", errorCode: .workerCrashed, transient: !final, at: at)
    }

    /// The result record of a job that ends as `fate` (``Fate/fail`` or ``Fate/cancel``), the
    /// notice's body too.
    public func result(_ fate: Fate, maxAttempts: Int) -> JobResult {
        let error =
            fate == .cancel
            ? ImagePipeError(.cancelled, "cancelled on request; the worker \(worker) died holding the job")
            : ImagePipeError(
                .workerCrashed,
                "the worker \(worker) died holding the job on its attempt \(attempts) (--max-attempts \(maxAttempts)): "
                    + "it is not given to another")
        return JobResult(source: source, status: .failed, error: error, attempts: attempts)
    }

    /// The notice of a job that ends as `fate`.
    public func notice(_ fate: Fate, maxAttempts: Int) -> JobNotice {
        JobNotice(event: fate == .cancel ? .cancelled : .failed, job: id, result: result(fate, maxAttempts: maxAttempts))
    }
}

/// The rule a queue asks about each job whose worker died; see ``WorkerStateMachine/fate(of:retry:)``.
public struct OrphanRule: Sendable {
    /// Attempts a job may have (`--max-attempts`).
    public var maxAttempts: Int

    /// The rule of `watch --max-attempts maxAttempts`.
    public init(maxAttempts: Int) { self.maxAttempts = max(1, maxAttempts) }

    /// What becomes of `orphan`.
    public func fate(of orphan: Orphan) -> Orphan.Fate {
        WorkerStateMachine.fate(of: orphan, retry: RetryPolicy(maxAttempts: maxAttempts))
    }
}
