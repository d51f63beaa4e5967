// What a worker loop reports as its jobs settle: the outcomes the queue recorded, and the retries (for metrics).
public import ImagePipe

/// Told by a ``WorkerLoop`` what became of each job once the queue has recorded it.
///
/// Called on the loop's tasks, once per settled job; keep it quick. Jobs given back unfinished (a
/// shutdown) or dropped after a lost lease are not reported: another worker reports them.
public protocol WorkerObserver: Sendable {
    /// A job's outcome was recorded: done, skipped (up to date) or failed for good, as the result says.
    func jobFinished(_ result: JobResult)
    /// A job was recorded cancelled (PostgreSQL `queue cancel`): its result says `failed` with the
    /// reason it stopped, and the job's fate, as its state and notification say, is `cancelled`.
    func jobCancelled(_ result: JobResult)
    /// An attempt failed for a reason that may pass; the job runs again after a delay.
    func jobRetrying(_ result: JobResult)
}
