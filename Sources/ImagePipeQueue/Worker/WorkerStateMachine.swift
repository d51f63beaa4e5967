// The worker loop's whole state and every decision it makes, with no I/O: events in, actions out.
import ImagePipe

/// What a ``WorkerLoop`` knows and decides: its lifecycle, the jobs it holds, its claim in flight,
/// the retries it keeps, and the pipeline room it may use.
///
/// Every event (a claim came back, a job was handed off or finished, a settlement was recorded, a
/// lease was lost, a timer fired, a stop was asked for) returns the actions the loop must take:
/// claim, submit, settle, release, renew leases, wake at a time, finish. The loop around it does
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
    /// Where the loop is in its life.
    public private(set) var lifecycle: Lifecycle = .opening
    /// The jobs held, by ID.
    public private(set) var held: [String: Held] = [:]
    /// Jobs recorded as done or skipped, failed for good, and cancelled.
    public private(set) var done = 0, failed = 0, cancelled = 0
    /// How many times the loop looked for work: a loop that spins shows here.
    public private(set) var looks = 0
    /// When the loop last looked for work.
    public private(set) var lastLook: Instant
    /// When the claim in flight started, if one is.
    public private(set) var claimStartedAt: Instant?
    /// Given back while still running: their results are ignored.
    private var abandoned: Set<String> = []
    /// Settlement answers still to come about an attempt before the one held: a job put back in the
    /// queue can be claimed again before the answer to its settlement reaches the loop.
    private var staleAnswers: [String: Int] = [:]
    /// Whether the queue may have more to give: not after a claim came back short, until it says
    /// it has new work or its poll interval has passed.
    private var queueMayHaveMore = true
    /// A wake that came while a claim was in flight: that claim may have looked before the new work
    /// was there, so its coming back short does not mean the queue is empty.
    private var wokenDuringClaim = false
    private var shortClaimAt: Instant?
    var fullStorage: (streak: Int, until: Instant)?
    private var checkingEmpty = false
    private var lastEmptyCheck: Instant?
    private var awaitingOthers = false
    /// Draining because a stop was asked for (not because the queue is worked off): jobs a claim
    /// brings now go back at once, as those claimed before and not started do.
    private var shuttingDown = false
    private var stoppedAt: Instant?

    /// A loop about to open its queue at `now`.
    public init(limits: Limits, now: Instant) {
        self.limits = limits
        self.lastLook = now
    }

    /// Jobs held that are not waiting for a retry.
    public var inFlight: Int { held.values.count { if case .waitingRetry = $0.phase { false } else { true } } }
    /// Jobs waiting for a retry.
    public var retrying: Int { held.count - inFlight }
    /// Whether a stop was asked for.
    public var isStopping: Bool { lifecycle != .opening && lifecycle != .running }
    /// When claiming pauses for a full storage ends, if it does.
    public var pausedUntil: Instant? { fullStorage?.until }

    // MARK: - Events

    /// Handles `event` at `now`; `available` is how many jobs the pipeline admits now.
    public mutating func handle(_ event: Event, now: Instant, available: Int) -> [Action] {
        if lifecycle == .closed {
            // Finished: only jobs that still reach it (a claim that was under way) go back.
            if case .claimed(let jobs, _) = event, !jobs.isEmpty { return [.release(jobs, .claimedWhileStopping)] }
            return []
        }
        var actions: [Action]
        switch event {
        case .opened:
            if lifecycle == .opening { lifecycle = .running }
            actions = []
        case .wake:
            queueMayHaveMore = true
            if claimStartedAt != nil { wokenDuringClaim = true }
            actions = []
        case .roomReturned:
            actions = []
        case .tick:
            if let shortClaimAt, now >= shortClaimAt + limits.pollInterval { queueMayHaveMore = true }
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
            actions = beginDraining(logged: true)
            if !shuttingDown, lifecycle == .draining { actions += withdrawNotStarted() }
            shuttingDown = true
        case .stopNow(let reason):
            actions = stopNow(reason, now: now)
        }
        return actions + look(now: now, available: available)
    }

    private mutating func claimed(_ jobs: [ClaimedJob], asked: Int, now: Instant) -> [Action] {
        claimStartedAt = nil
        queueMayHaveMore = jobs.count >= asked || wokenDuringClaim
        wokenDuringClaim = false
        shortClaimAt = queueMayHaveMore ? nil : now
        guard !jobs.isEmpty else { return [] }
        switch lifecycle {
        case .draining where shuttingDown:
            return [.release(jobs, .claimedWhileStopping)]
        case .opening, .running, .draining:
            for job in jobs {
                if let earlier = held[job.id], case .settling = earlier.phase { staleAnswers[job.id, default: 0] += 1 }
                held[job.id] = Held(claimed: job, phase: .running)
            }
            return [.submit(jobs)]
        case .stoppingNow, .closed:
            return [.release(jobs, .claimedWhileStopping)]
        }
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
        case .recorded, .recordedDiscarded:
            switch job.phase {
            case .settling(.complete) where outcome == .recordedDiscarded: failed += 1
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
        checkingEmpty = false
        guard let remainder, remainder.due == 0, held.isEmpty, lifecycle == .running else { return [] }
        guard remainder.unconfirmed == 0 else {
            defer { awaitingOthers = true }
            return awaitingOthers ? [] : [.note(.awaitingOthers(remainder.unconfirmed))]
        }
        return [.note(.queueEmpty(later: remainder.later))] + beginDraining(logged: false)
    }

    private mutating func beginDraining(logged: Bool) -> [Action] {
        guard lifecycle == .running || lifecycle == .opening else { return [] }
        lifecycle = .draining
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
        guard lifecycle != .stoppingNow && lifecycle != .closed else { return [] }
        lifecycle = .stoppingNow
        stoppedAt = now
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

    // MARK: - Looking for work

    /// What to do now that something happened: rerun due retries, claim, check whether the queue is
    /// worked off, finish, and when to look again if nothing happens first.
    private mutating func look(now: Instant, available: Int) -> [Action] {
        switch lifecycle {
        case .opening, .closed:
            return []
        case .draining:
            // A claim under way is waited for: its jobs run (or go back) before the loop ends.
            return held.isEmpty && claimStartedAt == nil ? finish() : []
        case .stoppingNow:
            let waiting = held.values.contains(where: \.isSettling) || claimStartedAt != nil
            guard waiting, let stoppedAt, now < stoppedAt + limits.settlingGrace else { return finish() }
            return [.wakeAt(stoppedAt + limits.settlingGrace)]
        case .running:
            break
        }
        looks += 1
        lastLook = now
        var actions: [Action] = []
        var places = max(0, available)

        let due = held.values.filter { job in
            if case .waitingRetry(let until) = job.phase { until <= now } else { false }
        }.map(\.claimed).sorted { $0.id < $1.id }
        var reruns: [ClaimedJob] = []
        for var claimed in due.prefix(places) {
            claimed.job.attempt += 1
            held[claimed.id] = Held(claimed: claimed, phase: .running)
            reruns.append(claimed)
        }
        places -= reruns.count
        if !reruns.isEmpty { actions.append(.rerun(reruns)) }

        if claimStartedAt == nil && queueMayHaveMore {
            let count = min(room(now: now), places)
            if count > 0 {
                claimStartedAt = now
                actions.append(.claim(upTo: count))
            }
        }
        // Asked at most once per poll interval: an answer that is not empty must not make the loop
        // ask again at once.
        let emptyCheckDue = lastEmptyCheck.map { now >= $0 + limits.pollInterval } ?? true
        if limits.exitWhenEmpty && held.isEmpty && claimStartedAt == nil && !queueMayHaveMore && !checkingEmpty && emptyCheckDue {
            checkingEmpty = true
            lastEmptyCheck = now
            actions.append(.checkEmpty(dueWithin: limits.retry.maxDelay))
        }
        actions.append(.wakeAt(nextLook(now: now, retriesWaitForRoom: due.count > reruns.count)))
        return actions
    }

    /// How many more jobs may be claimed now, by the claiming rules (before the pipeline's own say).
    public func room(now: Instant) -> Int {
        if let pausedUntil, now < pausedUntil { return 0 }
        let working = held.values.count(where: \.holdsRoom)
        guard working <= limits.room / 2 else { return 0 }
        return max(0, min(limits.room - working, limits.holdLimit - held.count))
    }

    /// When to look again if nothing happens first: the next retry due (not one already due that
    /// waits for room: its time is past, and a place given back wakes the loop), the end of a
    /// pause, the poll after a short claim, and at least every poll interval.
    private func nextLook(now: Instant, retriesWaitForRoom: Bool) -> Instant {
        var next = now + limits.pollInterval
        for job in held.values {
            if case .waitingRetry(let until) = job.phase, !(retriesWaitForRoom && until <= now) { next = min(next, until) }
        }
        if let pausedUntil, pausedUntil > now { next = min(next, pausedUntil) }
        if let shortClaimAt, !queueMayHaveMore { next = min(next, max(now, shortClaimAt + limits.pollInterval)) }
        return next
    }

    private mutating func finish() -> [Action] {
        lifecycle = .closed
        return [.finish]
    }
}
