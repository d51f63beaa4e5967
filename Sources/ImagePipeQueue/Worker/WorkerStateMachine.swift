// The worker loop's whole state and every decision it makes, with no I/O: events in, actions out.
import ImagePipe

/// What a ``WorkerLoop`` knows and decides: its life (one enum whose cases carry their state: the
/// claim in flight, the pause of a full storage, the check for an empty queue, why and since when it
/// stops), the jobs it holds, the retries it keeps, the pipeline room it may use, and the notices it
/// sends (see ``Notices``).
///
/// Every event (a claim came back, a job was handed off or finished, a settlement was recorded, a
/// lease was lost, a timer fired, a stop was asked for, a notice was kept or delivered) returns the
/// actions the loop must take: claim, submit, settle, release, renew leases, send, forget, take over
/// or leave notices, wake at a time, finish. The loop around it does
/// the I/O and reports back; nothing here waits, sleeps or locks, so every rule is tested with
/// plain values (see `WorkerStateMachineTests`).
///
/// Claiming rules: a worker claims only what its pipeline admits, so a claimed job never waits for
/// a place, and claims refill in batches: nothing while more than half the room is working, then
/// every free place at once. Every held job counts against the room except those whose outputs
/// were handed to the store and only wait to be made durable; those count only against the hold
/// limit. Jobs waiting for a retry hold no pipeline room but still count: during an outage a worker
/// must not drain the queue into its own hands. A job that finds the storage full is retried like
/// any transient failure, but claiming pauses, the pause doubling with each such failure in a row up
/// to the retry policy's longest delay, until a job is stored again. After a claim that came back
/// short, the queue is asked again only when it says it has new work or after its poll interval.
public struct WorkerStateMachine: ~Copyable {
    public typealias Instant = ContinuousClock.Instant

    /// The settings.
    public let limits: Limits
    /// Where the loop is in its life, with the state of that part of it.
    var life: Life = .opening(takingOverNotices: false)
    /// The jobs held, by ID.
    public internal(set) var held: [String: Held] = [:]
    /// The notices this worker sends (see ``Notices``).
    var notices: Notices
    /// Jobs recorded as done or skipped, failed for good, and cancelled.
    public private(set) var done = 0, failed = 0, cancelled = 0
    /// How many times the loop looked for work: a loop that spins shows here.
    public internal(set) var looks = 0
    /// When the loop last looked for work.
    public internal(set) var lastLook: Instant
    /// Given back while still running: their results are ignored.
    private var abandoned: Set<String> = []
    /// Settlement answers still to come about an attempt before the one held: a job put back in the
    /// queue can be claimed again before the answer to its settlement reaches the loop.
    private var staleAnswers: [String: Int] = [:]

    /// A loop about to open its queue at `now`.
    public init(limits: Limits, now: Instant) {
        self.limits = limits
        self.lastLook = now
        self.notices = Notices(room: limits.noticeRoom ?? 0)
    }

    /// Where the loop is in its life.
    public var lifecycle: Lifecycle { life.lifecycle }
    /// When the claim in flight started, if one is.
    public var claimStartedAt: Instant? { life.claimStartedAt }
    /// Jobs held that are not waiting for a retry.
    public var inFlight: Int { held.values.count { if case .waitingRetry = $0.phase { false } else { true } } }
    /// Jobs waiting for a retry.
    public var retrying: Int { held.count - inFlight }
    /// Whether a stop was asked for.
    public var isStopping: Bool { lifecycle != .opening && lifecycle != .running }
    /// When claiming pauses for a full storage ends, if it does.
    public var pausedUntil: Instant? {
        if case .running(let running) = life { running.fullStorage?.until } else { nil }
    }
    /// Notices of this worker's jobs waiting for room in the notifier, and notices it handed over
    /// that are not yet delivered or given up.
    public var noticesUndelivered: (waiting: Int, sending: Int) { (notices.waiting.count, notices.sending.count) }

    // MARK: - Events

    /// Handles `event` at `now`; `available` is how many jobs the pipeline admits now.
    public mutating func handle(_ event: Event, now: Instant, available: Int) -> [Action] {
        if case .closed = life {
            // Finished: only jobs that still reach it (a claim that was under way) go back.
            if case .claimed(let jobs, _) = event, !jobs.isEmpty { return [.release(jobs, .claimedWhileStopping)] }
            return []
        }
        var actions: [Action]
        switch event {
        case .opened:
            actions = []
            if case .opening = life {
                // With a notifier, the notices dead workers left go out before the first claim.
                actions = takeOverNotices()
                life = actions.isEmpty ? .running(Running()) : .opening(takingOverNotices: true)
            }
        case .wake:
            if case .running(var running) = life {
                switch running.polling {
                case .claiming(let since, _): running.polling = .claiming(since: since, woken: true)
                case .mayHaveMore, .shortClaim: running.polling = .mayHaveMore
                }
                life = .running(running)
            }
            actions = []
        case .roomReturned:
            actions = []
        case .tick:
            if case .running(var running) = life, case .shortClaim(let at) = running.polling, now >= at + limits.pollInterval {
                running.polling = .mayHaveMore
                life = .running(running)
            }
            actions = []
        case .claimed(let jobs, let asked):
            actions = claimed(jobs, asked: asked, now: now)
        case .rerunDeferred(let ids):
            for id in ids where held[id]?.phase == .running {
                held[id]?.phase = .waitingRetry(until: now)
                held[id]?.claimed.job.attempt -= 1
            }
            actions = []
        case .handedOff(let id):
            // Marked only while no result has come: a settled or failed job is working again.
            if held[id]?.phase == .running { held[id]?.handedOff = true }
            actions = []
        case .finished(let id, let result):
            actions = finished(id, result, now: now)
        case .withdrawn(let id):
            actions = withdrawn(id)
        case .settled(let id, let outcome):
            actions = settled(id, outcome, now: now)
        case .heartbeatDue:
            let jobs = held.values.filter { !$0.lost }.map(\.claimed).sorted { $0.id < $1.id }
            actions = jobs.isEmpty ? [] : [.renew(jobs)]
        case .leaseLost(let ids):
            // A job being settled was recorded between the snapshot and the heartbeat: not lost.
            let lost = ids.sorted().compactMap { id -> ClaimedJob? in
                guard let job = held[id], job.phase == .running, !job.lost else { return nil }
                held[id]?.lost = true
                return job.claimed
            }
            actions = lost.map { .note(.leaseLost($0)) } + (lost.isEmpty ? [] : [.abandon(lost.map(\.id))])
        case .cancelRequested(let ids):
            // Only work under way can stop: a job whose result is being recorded has ended (the
            // queue's own records turn a retry or a give-back of it into cancelled).
            let asked = ids.sorted().compactMap { id -> ClaimedJob? in
                guard let job = held[id], job.phase == .running, !job.lost, !job.cancelRequested else { return nil }
                held[id]?.cancelRequested = true
                return job.claimed
            }
            actions = asked.map { .note(.cancelRequested($0)) } + (asked.isEmpty ? [] : [.abandon(asked.map(\.id))])
        case .emptyChecked(let remainder):
            actions = emptyChecked(remainder)
        case .gracefulShutdown:
            let stopAlreadyAsked = stopRequestedAt != nil
            actions = beginDraining(.stopRequested(since: now), logged: true)
            if case .draining(var draining) = life, !stopAlreadyAsked {
                // A queue worked off is stopped too: jobs a claim brings now go back at once.
                draining.reason = .stopRequested(since: now)
                life = .draining(draining)
                actions += withdrawNotStarted()
            }
        case .stopNow(let reason):
            actions = stopNow(reason, now: now)
        case .noticeKept, .noticeAccepted, .noticeSettled, .noticesForgotten, .maintained, .noticesTakenOver, .noticesRefused:
            actions = handleNotice(event, now: now)
        }
        return actions + look(now: now, available: available)
    }

    /// When a stop was asked for, if one was.
    private var stopRequestedAt: Instant? {
        switch life {
        case .draining(let draining): draining.stopRequestedAt
        case .stoppingNow(let stopping): stopping.stopRequestedAt
        case .opening, .running, .notifying, .closed: nil
        }
    }

    private mutating func claimed(_ jobs: [ClaimedJob], asked: Int, now: Instant) -> [Action] {
        switch life {
        case .running(var running):
            let woken = if case .claiming(_, let woken) = running.polling { woken } else { false }
            // Jobs given back in a pause are in the queue still: a short answer then says not that
            // it is empty, and no empty check may run beside their release.
            let givenBack = running.isPaused(at: now) && jobs.contains { $0.refusal == nil }
            running.polling = jobs.count >= asked || woken || givenBack ? .mayHaveMore : .shortClaim(at: now)
            life = .running(running)
        case .draining(var draining):
            draining.claimSince = nil
            life = .draining(draining)
        case .stoppingNow(var stopping):
            stopping.claimSince = nil
            life = .stoppingNow(stopping)
        case .opening, .notifying, .closed:
            break
        }
        guard !jobs.isEmpty else { return [] }
        // A job the queue could not make a job of (its options cannot be used) is failed for good
        // without running, whatever the loop is doing: trying again could not help.
        let refused = jobs.filter { $0.refusal != nil }
        let runnable = jobs.filter { $0.refusal == nil }
        var actions: [Action] = []
        switch life {
        case .draining where stopRequestedAt != nil, .stoppingNow, .notifying, .closed:
            if !runnable.isEmpty { actions.append(.release(runnable, .claimedWhileStopping)) }
        case .running(let running) where running.isPaused(at: now):
            // A claim asked for before the pause began and answered in it: its jobs would only
            // meet the full store, and held here they wait out the pause where no other worker can
            // take them. They go back untouched, with their pipeline places.
            if !runnable.isEmpty { actions.append(.release(runnable, .claimedWhilePaused)) }
        case .opening, .running, .draining:
            for job in runnable { hold(job, .running) }
            if !runnable.isEmpty { actions.append(.submit(runnable)) }
        }
        if case .notifying = life {
            // Too late to record anything: it goes back, to be refused by the next worker.
            if !refused.isEmpty { actions.append(.release(refused, .claimedWhileStopping)) }
            return actions
        }
        for job in refused {
            // It holds no pipeline place: none was taken for it.
            hold(job, .settling(.discard), handedOff: true)
            if let result = job.refusalResult { actions.append(.settle(job, .discard, result)) }
        }
        return actions
    }

    private mutating func hold(_ job: ClaimedJob, _ phase: Phase, handedOff: Bool = false) {
        if let earlier = held[job.id], case .settling = earlier.phase { staleAnswers[job.id, default: 0] += 1 }
        held[job.id] = Held(claimed: job, phase: phase, handedOff: handedOff)
    }

    private mutating func finished(_ id: String, _ result: JobResult, now: Instant) -> [Action] {
        if abandoned.remove(id) != nil { return [] }
        guard var job = held[id], job.phase == .running else { return [] }
        if job.lost {
            // Logged when the heartbeat found it lost.
            held[id] = nil
            return []
        }
        var actions: [Action] = []
        if let note = noteStorage(result, now: now) { actions.append(.note(note)) }
        // A job asked to cancel that got done first is done: its outputs are all stored.
        let decision =
            job.cancelRequested && result.status == .failed
            ? .cancel : decide(result, attempt: job.claimed.job.attempt, earlierDecoderFailures: job.claimed.job.earlierDecoderFailures)
        job.phase = .settling(decision)
        // A failure counts as work again at once: it may become a retry this worker holds.
        if result.status == .failed { job.handedOff = false }
        actions.append(.settle(job.claimed, decision, result))
        // A retry this worker keeps never goes back through a claim, where the queue would count this
        // failure: it runs again with it counted here.
        if case .retry = decision, result.errorCode?.isDecoderFailure == true { job.claimed.job.earlierDecoderFailures += 1 }
        held[id] = job
        return actions
    }

    /// A job that ended without starting goes back to the queue, its attempt not counted; one
    /// already given back (stopping at once) or taken by another worker (lease lost) is only forgotten.
    private mutating func withdrawn(_ id: String) -> [Action] {
        if abandoned.remove(id) != nil { return [] }
        guard let job = held[id], job.phase == .running else { return [] }
        held[id] = nil
        return job.lost ? [] : [.release([job.claimed], .withdrawn)]
    }

    private mutating func settled(_ id: String, _ outcome: Settled, now: Instant) -> [Action] {
        // The answer about an attempt before the one held (see `staleAnswers`) leaves the new one
        // as it is, whether it still runs or is being settled in its turn.
        if let stale = staleAnswers[id] {
            staleAnswers[id] = stale > 1 ? stale - 1 : nil
            return []
        }
        guard let job = held[id], case .settling = job.phase else { return [] }
        switch outcome {
        case .keptForRetry(let delay):
            guard lifecycle == .running || lifecycle == .opening else {
                held[id] = nil
                return [.release([job.claimed], .retryWhileStopping)]
            }
            held[id]?.phase = .waitingRetry(until: now + delay)
            held[id]?.handedOff = false
            return []
        case .recorded:
            switch job.phase {
            case .settling(.complete): done += 1
            case .settling(.discard): failed += 1
            case .settling(.cancel): cancelled += 1
            default: break
            }
            held[id] = nil
            return []
        case .requeued, .released, .leaseLost, .unrecorded:
            held[id] = nil
            return []
        }
    }

    /// Stops once nothing is held, nothing is due within the horizon and nothing other workers hold
    /// may come back to the queue; jobs due later stay for a later run, and are named.
    private mutating func emptyChecked(_ remainder: QueueRemainder?) -> [Action] {
        guard case .running(var running) = life else { return [] }
        running.emptyCheck.asking = false
        defer { if case .running = life { life = .running(running) } }
        guard let remainder, remainder.due == 0, held.isEmpty else { return [] }
        // The check itself ended jobs and kept their notices: they go out from here before the
        // queue is called empty (the next look asks again).
        if notifies, remainder.noticesKept > 0 {
            if notices.takeOver == .drained { notices.takeOver = .mayHaveMore }
            return takeOverNotices()
        }
        // A take-over under way may bring notices the check kept before: its answer comes first.
        if notifies, case .asking = notices.takeOver { return [] }
        guard remainder.unconfirmed == 0 else {
            defer { running.emptyCheck.awaitingOthers = true }
            return running.emptyCheck.awaitingOthers ? [] : [.note(.awaitingOthers(remainder.unconfirmed))]
        }
        return [.note(.queueEmpty(later: remainder.later))] + beginDraining(.queueEmpty, logged: false)
    }

    private mutating func beginDraining(_ reason: Draining.Reason, logged: Bool) -> [Action] {
        let claimSince: Instant?
        switch life {
        case .running(let running): claimSince = running.polling.claimSince
        case .opening: claimSince = nil
        case .draining, .stoppingNow, .notifying, .closed: return []
        }
        life = .draining(Draining(reason: reason, claimSince: claimSince))
        var actions: [Action] = logged ? [.note(.draining)] : []
        let waiting = takeWaitingRetries()
        if !waiting.isEmpty { actions.append(.release(waiting, .waitingRetries)) }
        return actions
    }

    /// Jobs claimed but only waiting for their turn go back for other workers, rather than holding
    /// a stop up; what has started finishes. A job asked to cancel is left to reach its safe point
    /// and be recorded cancelled.
    private func withdrawNotStarted() -> [Action] {
        let waitingToStart = held.filter {
            $0.value.phase == .running && !$0.value.handedOff && !$0.value.lost && !$0.value.cancelRequested
        }.keys.sorted()
        return waitingToStart.isEmpty ? [] : [.withdraw(waitingToStart)]
    }

    private mutating func stopNow(_ reason: StopReason, now: Instant) -> [Action] {
        let claimSince: Instant?
        switch life {
        case .opening: claimSince = nil
        case .running(let running): claimSince = running.polling.claimSince
        case .draining(let draining): claimSince = draining.claimSince
        case .notifying:
            // The stop's time is up (the service group cancelled the loop): what is left stays kept.
            return reason == .cancelled ? leaveNoticesAndFinish() : []
        case .stoppingNow, .closed: return []
        }
        life = .stoppingNow(StoppingNow(since: now, stopRequestedAt: stopRequestedAt ?? now, claimSince: claimSince))
        var actions: [Action] = reason == .requested ? [.note(.stoppingNow)] : []
        let waiting = takeWaitingRetries()
        if !waiting.isEmpty { actions.append(.release(waiting, .waitingRetries)) }
        let running = held.filter { $0.value.phase == .running }.keys.sorted()
        let unfinished = running.compactMap { held.removeValue(forKey: $0)?.claimed }
        abandoned.formUnion(running)
        if !unfinished.isEmpty { actions.append(.release(unfinished, .unfinished(reason))) }
        return actions
    }

    private mutating func takeWaitingRetries() -> [ClaimedJob] {
        let ids = held.compactMap { id, job -> String? in
            if case .waitingRetry = job.phase { id } else { nil }
        }.sorted()
        return ids.compactMap { held.removeValue(forKey: $0)?.claimed }
    }
}
