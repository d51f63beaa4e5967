// The worker's decisions on a finished attempt: complete, retry, discard or give back, and storage pauses.
public import ImagePipe

extension WorkerStateMachine {
    /// The fate of a finished attempt. An up-to-date re-delivery counts as done. A store that
    /// refuses (expired credentials, a bucket policy) is put right outside the job, so its jobs wait
    /// and retry like any other storage failure instead of failing at once; while stopping, a
    /// failure that may pass gives the job back. A decoder that crashed or ran out of time
    /// (``ImagePipeError/Code/isDecoderFailure``) is retried once, as the machine may have been the
    /// cause (the OOM killer, a stall); when it fails so again, `earlierDecoderFailures` being the
    /// job's earlier attempts that did, the image is the cause, and the job fails for good whatever
    /// attempts are left, also while stopping: given back, it would crash another helper.
    public func decide(_ result: JobResult, attempt: Int, earlierDecoderFailures: Int = 0) -> Decision {
        if result.status != .failed { return .complete }
        if result.errorCode?.isDecoderFailure == true && earlierDecoderFailures > 0 { return .discard }
        guard result.transient == true || result.errorCode == .storageRejected else { return .discard }
        if isStopping { return .release }
        guard limits.retry.shouldRetry(afterAttempt: attempt) else { return .discard }
        return .retry(after: limits.retry.delay(afterAttempt: attempt))
    }

    /// What becomes of a job whose worker died holding it, by one rule for every queue: cancelled
    /// when someone asked; failed for good (`worker_crashed`) once it has had the attempts `retry`
    /// allows, so a job that kills its worker does not kill every worker after it; else it waits
    /// again. The queue found it and carries the fate out (see ``Orphan``).
    public static func fate(of orphan: Orphan, retry: RetryPolicy) -> Orphan.Fate {
        if orphan.cancelRequested { return .cancel }
        return retry.shouldRetry(afterAttempt: orphan.attempts) ? .retry : .fail
    }

    /// A stored job ends a pause; a `storage_full` one starts or lengthens it, as does a
    /// `storage_unavailable` one (reported only once a request's retries are spent: the store
    /// stayed down through them, and the next claims would only meet it too). Only a running loop
    /// pauses: one that stops claims no more.
    mutating func noteStorage(_ result: JobResult, now: Instant) -> Note? {
        guard case .running(var running) = life else { return nil }
        defer { life = .running(running) }
        if result.status == .done {
            guard running.fullStorage != nil else { return nil }
            running.fullStorage = nil
            return .resumed
        }
        guard let code = result.errorCode, code == .storageFull || code == .storageUnavailable else { return nil }
        let streak = (running.fullStorage?.streak ?? 0) + 1
        let pause = min(limits.retry.maxDelay, limits.fullStoragePause * (1 << min(30, streak - 1)))
        running.fullStorage = FullStorage(streak: streak, until: now + pause)
        return streak == 1 ? .paused(pause, code: code, error: result.error ?? "") : nil
    }
}
