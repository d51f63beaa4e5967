// Claiming: reserve pipeline room first, then claim that many jobs (retries held by the worker first).
import Foundation
import ImagePipe
import Synchronization
import Logging

extension WorkerLoop {
    /// Claims until the loop stops. Reserving before claiming means a claimed job never waits for
    /// the pipeline, and a burst of thousands of jobs costs other workers nothing.
    func claimLoop() async {
        while true {
            let now = clock.now
            let stopping = state.withLock { state in
                state.lastLook = now
                state.looks += 1
                return state.stopping
            }
            if stopping { return }
            let retriesWaitForRoom = rerunDueRetries()
            let room = state.withLock { state in
                state.claims.room(held: state.held.count, working: state.held.values.count { !$0.handedOff }, at: now)
            }
            var reserved = 0
            while reserved < room && pipeline.reserve(timeout: .now()) { reserved += 1 }
            if reserved > 0 {
                let jobs = await queue.claim(upTo: reserved)
                for _ in jobs.count..<reserved { pipeline.cancelReservation() }
                state.withLock { state in
                    for job in jobs { state.held[job.id] = Held(claimed: job, phase: .inFlight) }
                }
                for job in jobs { submit(job) }
                // The queue gave all that was asked: there may be more.
                if jobs.count == reserved { continue }
            }
            if configuration.exitWhenEmpty, await queueIsWorkedOff() {
                logger.notice("the queue is empty: stopping", metadata: ["queue": "\(queue.displayName)"])
                beginStopping()
                return
            }
            await wakeup.wait(
                until: nextLook(afterNoRoom: room > 0 && reserved == 0, retriesWaitForRoom: retriesWaitForRoom), on: clock)
        }
    }

    /// Whether this worker holds nothing and nothing is waiting to be claimed (due or not): what
    /// `exitWhenEmpty` waits for. Unknown (a queue that cannot be reached) counts as not empty.
    private func queueIsWorkedOff() async -> Bool {
        guard state.withLock({ $0.held.isEmpty }) else { return false }
        return await queue.waitingCount() == 0
    }

    /// When to look again if nothing wakes the loop first.
    ///
    /// - Parameters:
    ///   - afterNoRoom: the hold limit allowed a claim but the pipeline had no slot: a job has just
    ///     finished and its slot is being handed back, so look again almost at once.
    ///   - retriesWaitForRoom: retries are due but found no slot: their times are past, so they
    ///     must not set the next look (that would spin); a slot given back wakes the loop.
    private func nextLook(afterNoRoom: Bool, retriesWaitForRoom: Bool) -> ContinuousClock.Instant {
        let now = clock.now
        var next = now + (afterNoRoom ? .milliseconds(1) : queue.pollInterval)
        state.withLock { state in
            for held in state.held.values {
                if case .waitingRetry(let until) = held.phase, !(retriesWaitForRoom && until <= now) { next = min(next, until) }
            }
            if let pausedUntil = state.claims.pausedUntil, pausedUntil > now { next = min(next, pausedUntil) }
        }
        return next
    }

    /// Runs again the held jobs whose retry delay has passed, as the pipeline has room.
    /// - Returns: whether some due retries found no room in the pipeline and still wait.
    private func rerunDueRetries() -> Bool {
        let now = clock.now
        let due = state.withLock { state in
            state.held.values.filter { held in
                if case .waitingRetry(let until) = held.phase { until <= now } else { false }
            }.map(\.claimed).sorted { $0.id < $1.id }
        }
        for var claimed in due {
            guard pipeline.reserve(timeout: .now()) else { return true }
            claimed.job.attempt += 1
            state.withLock { $0.held[claimed.id] = Held(claimed: claimed, phase: .inFlight) }
            submit(claimed)
        }
        return false
    }

    /// Hands a claimed job to the pipeline, in the slot reserved for it.
    func submit(_ claimed: ClaimedJob) {
        let id = claimed.id
        pipeline.submitReserved(
            claimed.job,
            roomReturned: { [self] beforeResult in
                // Marked only while no result has come: a settled or failed job is working again.
                if beforeResult {
                    state.withLock { state in
                        if state.held[id]?.phase == .inFlight { state.held[id]?.handedOff = true }
                    }
                }
                wakeup.signal()
            },
            completion: { [resultsInput] result in
                resultsInput.yield(Finished(id: id, result: result))
            })
    }
}
