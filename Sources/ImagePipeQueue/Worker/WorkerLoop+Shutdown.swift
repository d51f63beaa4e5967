// Stopping: no new claims, jobs in flight finish within the timeout, the rest are given back.
import Foundation
import ImagePipe
import Logging
import Synchronization

extension WorkerLoop {
    /// Stops claiming; `run()` then drains and returns. Graceful shutdown calls this.
    public func beginStopping() {
        let first = state.withLock { state -> Bool in
            defer { state.stopping = true }
            return !state.stopping
        }
        guard first else { return }
        for timer in [wakeup, statusTimer, maintenanceTimer] { timer.signal() }
    }

    /// Stops at once: jobs in flight are not waited for, and they and every job waiting for a retry
    /// are given back. Cuts a graceful shutdown short.
    public func stopNow() {
        let first = state.withLock { state -> Bool in
            defer { state.stoppingNow = true }
            return !state.stoppingNow
        }
        if first {
            logger.notice("stopping now: every job goes back", metadata: ["to": "\(queue.releasePlace)"])
            drainWakeup.signal()
        }
        beginStopping()
    }

    /// Gives back the jobs waiting for a retry, waits for jobs in flight until the shutdown timeout
    /// (or a stop at once), then gives back those still running. A job whose result is being
    /// recorded is waited for: it is a short step, and giving it back at the same time could record
    /// it twice. Should the queue not answer (a database gone), that wait ends a little after the
    /// deadline, leaving such jobs to the queue's own recovery (their leases lapse).
    func drain() async {
        let deadline = clock.now + configuration.shutdownTimeout
        logger.notice(
            "shutting down: no new claims, waiting for jobs in flight",
            metadata: ["shutdown_timeout_ms": .stringConvertible(Int(configuration.shutdownTimeout.milliseconds.rounded()))])
        let waiting = state.withLock { state -> [ClaimedJob] in
            let ids = state.held.compactMap { id, held -> String? in
                if case .waitingRetry = held.phase { id } else { nil }
            }
            return ids.compactMap { state.held.removeValue(forKey: $0)?.claimed }
        }
        if !waiting.isEmpty { await queue.release(waiting) }

        while true {
            let (running, settling, now) = state.withLock { state in
                (
                    state.held.values.contains { $0.phase == .inFlight }, state.held.values.contains { $0.phase == .settling },
                    state.stoppingNow || Task.isCancelled
                )
            }
            if !running && !settling { break }
            if !running && clock.now >= deadline + Self.settlingGrace { break }
            if running && (now || clock.now >= deadline) {
                await giveBackUnfinished()
                continue
            }
            await drainWakeup.wait(until: running ? deadline : clock.now + .seconds(1), on: clock)
        }
    }

    /// How long past the shutdown deadline results still being recorded are waited for.
    static var settlingGrace: Duration { .seconds(2) }

    /// Gives back the jobs still in the pipeline; their results, when they come, are ignored.
    private func giveBackUnfinished() async {
        let (unfinished, now) = state.withLock { state -> ([ClaimedJob], Bool) in
            let ids = state.held.compactMap { id, held in held.phase == .inFlight ? id : nil }
            state.abandoned.formUnion(ids)
            return (ids.compactMap { state.held.removeValue(forKey: $0)?.claimed }, state.stoppingNow)
        }
        await queue.release(unfinished)
        let metadata: Logger.Metadata = ["jobs": .stringConvertible(unfinished.count), "to": "\(queue.releasePlace)"]
        if now {
            logger.warning("stopped at once: returned the jobs in flight", metadata: metadata)
        } else {
            logger.warning("shutdown timeout: returned the unfinished jobs", metadata: metadata)
        }
    }
}
