// How many jobs a worker may claim now: its capacity, less what it holds, and none while the storage is full.
import ImagePipe

/// Decides how much a worker claims.
///
/// Jobs waiting for a retry hold no pipeline room but still count: during a storage outage a worker
/// must not drain the queue into its own hands, where other workers cannot reach the jobs. A job
/// that finds the storage full is retried like any transient failure, but claiming more would only
/// pile up jobs that cannot finish: claiming pauses, the pause doubling with each such failure in
/// a row up to the retry policy's longest delay, until a job is stored again.
struct ClaimPolicy: Sendable {
    /// A change worth one log line.
    enum Change: Equatable {
        case none
        case paused(Duration)
        case resumed
    }

    /// The most jobs held at once, running or waiting for a retry.
    let holdLimit: Int
    /// The first pause after the storage is found full.
    let firstPause: Duration
    /// The longest pause.
    let longestPause: Duration
    private var fullStorage: (streak: Int, until: ContinuousClock.Instant)?

    init(holdLimit: Int, firstPause: Duration, longestPause: Duration) {
        self.holdLimit = max(1, holdLimit)
        self.firstPause = firstPause
        self.longestPause = longestPause
    }

    /// How many more jobs may be claimed while `held` are held.
    ///
    /// Claims refill in batches: nothing while more than half the hold limit is held, then every
    /// free place at once. One claim statement then brings several jobs instead of one per freed
    /// slot, and the half still held keeps the compressors busy while the claim is made.
    func room(held: Int, at now: ContinuousClock.Instant) -> Int {
        if let pausedUntil, now < pausedUntil { return 0 }
        guard held <= holdLimit / 2 else { return 0 }
        return holdLimit - held
    }

    /// When a pause for a full storage ends, if one was started.
    var pausedUntil: ContinuousClock.Instant? { fullStorage?.until }

    /// Takes a finished job into account: a stored job ends a pause, a `storage_full` one starts or lengthens it.
    mutating func note(_ result: JobResult, at now: ContinuousClock.Instant) -> Change {
        if result.status == .done {
            guard fullStorage != nil else { return .none }
            fullStorage = nil
            return .resumed
        }
        guard result.errorCode == .storageFull else { return .none }
        let streak = (fullStorage?.streak ?? 0) + 1
        let pause = min(longestPause, firstPause * (1 << min(30, streak - 1)))
        fullStorage = (streak, now + pause)
        return streak == 1 ? .paused(pause) : .none
    }
}
