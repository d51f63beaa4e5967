// How many jobs a worker may claim now: its capacity, less what it holds, and none while the storage is full.
import ImagePipe

/// Decides how much a worker claims.
///
/// Every job a worker holds counts against its pipeline's room, except those whose outputs were
/// handed to the store and only wait for its round of fsyncs (and then for their record): they hold
/// no pipeline room and no image data, only their claim, so the worker goes on with the next jobs
/// meanwhile, as a batch does, up to ``holdFactor`` times its room in all. Jobs waiting for a retry
/// hold no pipeline room but still count: during a storage outage a worker must not drain the queue
/// into its own hands, where other workers cannot reach the jobs. A job handed off whose fsync or
/// rename then fails counts again only once its result comes: when the local disk itself fails
/// that way, a worker can end up holding retries up to its hold limit. A job
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

    /// The most jobs held at once, handed-off ones included.
    let holdLimit: Int
    /// The most jobs held at once that are not handed off: running, being recorded after a
    /// failure, or waiting for a retry. The pipeline's room.
    let workLimit: Int
    /// The first pause after the storage is found full.
    let firstPause: Duration
    /// The longest pause.
    let longestPause: Duration
    private var fullStorage: (streak: Int, until: ContinuousClock.Instant)?

    /// Jobs held in all per place in the pipeline. Measured on 2,000 small images through a queue
    /// directory (`watch --exit-when-empty --jobs 2`): see the README's watch-mode section.
    static let holdFactor = 3

    /// A policy for a pipeline with room for `pipelineRoom` jobs.
    init(pipelineRoom: Int, firstPause: Duration, longestPause: Duration) {
        self.workLimit = max(1, pipelineRoom)
        self.holdLimit = Self.holdFactor * workLimit
        self.firstPause = firstPause
        self.longestPause = longestPause
    }

    /// How many more jobs may be claimed while `held` are held, `working` of them not handed off.
    ///
    /// Claims refill in batches: nothing while more than half the work limit is working, then every
    /// free place at once. One claim statement then brings several jobs instead of one per freed
    /// slot, and the half still working keeps the compressors busy while the claim is made.
    func room(held: Int, working: Int, at now: ContinuousClock.Instant) -> Int {
        if let pausedUntil, now < pausedUntil { return 0 }
        guard working <= workLimit / 2 else { return 0 }
        return max(0, min(workLimit - working, holdLimit - held))
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
