// How many jobs a worker may claim now: its capacity, less what it holds, and none while the storage is full.
import ImagePipe

/// Decides how much a worker claims.
///
/// The pipeline's room bounds the jobs being worked on; a claim is only made for room reserved in
/// it. The hold limit bounds everything else a worker keeps from other workers. A job whose outputs
/// wait for the local storage's next round of fsyncs, or whose result is being recorded, holds no
/// pipeline room and no image data, only its claim: holding a few times the pipeline's room lets
/// the worker go on with the next jobs meanwhile, as a batch does.
///
/// Jobs waiting for a retry hold no pipeline room either, but claiming stops once as many wait as
/// the pipeline has room (the jobs running then may still join them): during a storage outage a
/// worker must not drain the queue into its own hands, where other workers cannot reach the jobs. A job
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

    /// The most jobs held at once: running, waiting for their outputs' fsyncs, being recorded, or
    /// waiting for a retry.
    let holdLimit: Int
    /// The most jobs waiting for a retry before claiming stops.
    let retryLimit: Int
    /// The first pause after the storage is found full.
    let firstPause: Duration
    /// The longest pause.
    let longestPause: Duration
    private var fullStorage: (streak: Int, until: ContinuousClock.Instant)?

    /// A policy for a pipeline with room for `pipelineRoom` jobs: it holds up to ``holdFactor`` times
    /// that, and stops claiming once that many wait for a retry.
    init(pipelineRoom: Int, firstPause: Duration, longestPause: Duration) {
        self.retryLimit = max(1, pipelineRoom)
        self.holdLimit = Self.holdFactor * retryLimit
        self.firstPause = firstPause
        self.longestPause = longestPause
    }

    /// Jobs held per place in the pipeline. Measured on 2,000 small images through a queue directory
    /// (`watch --exit-when-empty`, 2 cores, 3 alternated runs): 3.5–3.7 s holding the pipeline's
    /// room, 3.4–3.5 s holding twice it, 3.2–3.3 s four times.
    static let holdFactor = 4

    /// How many more jobs may be claimed while `held` are held, `retrying` of them waiting for a
    /// retry. The pipeline's own room limits it further when the claim is made.
    ///
    /// Claims refill in batches: nothing while more than half the hold limit is held, then every
    /// free place at once. One claim statement then brings several jobs instead of one per freed
    /// slot, and the half still held keeps the compressors busy while the claim is made.
    func room(held: Int, retrying: Int, at now: ContinuousClock.Instant) -> Int {
        if let pausedUntil, now < pausedUntil { return 0 }
        guard held <= holdLimit / 2 else { return 0 }
        return max(0, min(holdLimit - held, retryLimit - retrying))
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
