// The worker state machine looking for work: reruns, claims by the claiming rules, the empty check, and when to look again.
import ImagePipe

extension WorkerStateMachine {
    /// What to do now that something happened: rerun due retries, claim, check whether the queue is
    /// worked off, finish, and when to look again if nothing happens first.
    mutating func look(now: Instant, available: Int) -> [Action] {
        switch life {
        case .opening, .closed:
            return []
        case .draining(let draining):
            // A claim under way is waited for: its jobs run (or go back) before the loop ends.
            return held.isEmpty && draining.claimSince == nil ? finishOrNotify(now: now, stopRequestedAt: draining.stopRequestedAt) : []
        case .stoppingNow(let stopping):
            let waiting = held.values.contains(where: \.isSettling) || stopping.claimSince != nil
            guard waiting, now < stopping.since + limits.settlingGrace else {
                return finishOrNotify(now: now, stopRequestedAt: stopping.stopRequestedAt)
            }
            return [.wakeAt(stopping.since + limits.settlingGrace)]
        case .notifying(let until):
            return lookWhileNotifying(now: now, until: until)
        case .running(var running):
            let actions = lookForWork(&running, now: now, available: available)
            life = .running(running)
            return actions
        }
    }

    private mutating func lookForWork(_ running: inout Running, now: Instant, available: Int) -> [Action] {
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

        if running.polling == .mayHaveMore {
            let count = min(room(running, now: now), places)
            if count > 0 {
                running.polling = .claiming(since: now, woken: false)
                actions.append(.claim(upTo: count))
            }
        }
        // Asked at most once per poll interval: an answer that is not empty must not make the loop
        // ask again at once.
        if limits.exitWhenEmpty && held.isEmpty, case .shortClaim = running.polling, !running.emptyCheck.asking,
            running.emptyCheck.lastAsked.map({ now >= $0 + limits.pollInterval }) ?? true
        {
            running.emptyCheck.asking = true
            running.emptyCheck.lastAsked = now
            actions.append(.checkEmpty(dueWithin: limits.retry.maxDelay))
        }
        actions.append(.wakeAt(nextLook(running, now: now, retriesWaitForRoom: due.count > reruns.count)))
        return actions
    }

    /// How many more jobs may be claimed now, by the claiming rules (before the pipeline's own say).
    public func room(now: Instant) -> Int {
        guard case .running(let running) = life else { return 0 }
        return room(running, now: now)
    }

    /// Held jobs and this worker's notices waiting for room in the notifier (each in the place its
    /// job held) counted by the capacity's own rule; claims refill once half the room is free.
    private func room(_ running: Running, now: Instant) -> Int {
        if running.isPaused(at: now) { return 0 }
        let working = held.values.count(where: \.holdsRoom) + notices.waitingInRoom
        guard working <= limits.capacity.room / 2 else { return 0 }
        return limits.capacity.admits(working: working, held: held.count + notices.waiting.count)
    }

    /// When to look again if nothing happens first: the next retry due (not one already due that
    /// waits for room: its time is past, and a place given back wakes the loop), the end of a
    /// pause, the poll after a short claim, and at least every poll interval.
    private func nextLook(_ running: Running, now: Instant, retriesWaitForRoom: Bool) -> Instant {
        var next = now + limits.pollInterval
        for job in held.values {
            if case .waitingRetry(let until) = job.phase, !(retriesWaitForRoom && until <= now) { next = min(next, until) }
        }
        if let pause = running.fullStorage, pause.until > now { next = min(next, pause.until) }
        if case .shortClaim(let at) = running.polling { next = min(next, max(now, at + limits.pollInterval)) }
        return next
    }

    mutating func finish() -> [Action] {
        life = .closed
        return forgetSettledNotices(evenIfForgetting: true) + [.finish]
    }
}
