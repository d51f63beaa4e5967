// What a finished attempt leads to: done, another attempt after a backoff, discarded, or given back.
import ImagePipe

/// Decides the fate of a job from its attempt's result.
struct FinishPolicy: Sendable {
    /// What to do with a job.
    enum Decision: Equatable {
        /// Record the result.
        case complete
        /// Try again after the delay.
        case retry(after: Duration)
        /// Record the failure for good.
        case discard
        /// Give the job back unfinished: it failed for a reason that may pass while the worker stops.
        case release
    }

    /// Attempts and backoff.
    let retry: RetryPolicy

    /// The decision for `result`, the outcome of attempt `attempt`.
    ///
    /// An up-to-date re-delivery (every output in place from the same bytes) counts as done. A store
    /// that refuses (expired credentials, a bucket policy) is put right outside the job, so its jobs
    /// wait and retry like any other storage failure instead of failing at once.
    func decide(_ result: JobResult, attempt: Int, stopping: Bool) -> Decision {
        if result.status != .failed { return .complete }
        guard result.transient == true || result.errorCode == .storageRejected else { return .discard }
        if stopping { return .release }
        guard retry.shouldRetry(afterAttempt: attempt) else { return .discard }
        return .retry(after: retry.delay(afterAttempt: attempt))
    }
}
