// Settling: each result completed, retried, discarded or given back through the queue, and counted.
import Foundation
import ImagePipe
import Logging
import Synchronization

extension WorkerLoop {
    /// Settles results as the pipeline reports them, several at once (a queue may batch them).
    func settleResults() async {
        await withDiscardingTaskGroup { group in
            for await finished in results {
                group.addTask { await self.settle(finished.id, finished.result) }
            }
        }
    }

    private enum Step {
        case ignore
        case dropLost
        case decided(ClaimedJob, FinishPolicy.Decision, ClaimPolicy.Change)
    }

    func settle(_ id: String, _ result: JobResult) async {
        let now = clock.now
        let step = state.withLock { state -> Step in
            guard !state.abandoned.contains(id), var held = state.held[id] else { return .ignore }
            if held.lost {
                state.held[id] = nil
                return .dropLost
            }
            let change = state.claims.note(result, at: now)
            held.phase = .settling
            // A failure counts as work again at once: it may become a retry this worker holds.
            if result.status == .failed { held.handedOff = false }
            state.held[id] = held
            return .decided(held.claimed, finishing.decide(result, attempt: held.claimed.job.attempt, stopping: state.stopping), change)
        }
        switch step {
        case .ignore:
            return
        case .dropLost:
            // Logged when the heartbeat found it lost.
            forget(id)
        case .decided(let claimed, let decision, let change):
            log(change, result)
            await apply(decision, to: claimed, result)
        }
    }

    private func apply(_ decision: FinishPolicy.Decision, to claimed: ClaimedJob, _ result: JobResult) async {
        switch decision {
        case .complete:
            guard await settled(queue.complete(claimed, result: result), claimed) else { return }
            logger.info(result.status == .skipped ? "skipped" : "done", metadata: Self.metadata(result, claimed))
            state.withLock { $0.status.countDone() }
            observer?.jobFinished(result)
            forget(claimed.id)
        case .retry(let delay):
            let failure = AttemptRecord(result)
            var metadata = Self.metadata(result, claimed)
            metadata["max_attempts"] = .stringConvertible(configuration.retry.maxAttempts)
            metadata["retry_in_ms"] = .stringConvertible(Int(delay.milliseconds.rounded()))
            logger.warning("attempt failed, retrying", metadata: metadata)
            let disposition = await queue.retry(claimed, failure: failure, after: delay)
            if disposition == .keepHolding || disposition == .requeued { observer?.jobRetrying(result) }
            switch disposition {
            case .keepHolding:
                let until = clock.now + delay
                state.withLock { state in
                    state.held[claimed.id]?.claimed.history.append(failure)
                    state.held[claimed.id]?.phase = .waitingRetry(until: until)
                }
                wakeup.signal()
                drainWakeup.signal()
            case .requeued, .unrecorded:
                forget(claimed.id)
            case .leaseLost:
                dropLost(claimed)
            }
        case .discard:
            let record = FailureRecord(
                source: claimed.source, error: result.error ?? "unknown error", errorCode: result.errorCode,
                attempts: claimed.job.attempt, history: claimed.history + [AttemptRecord(result)], result: result)
            guard await settled(queue.discard(claimed, record: record), claimed) else { return }
            logger.error("failed", metadata: Self.metadata(result, claimed))
            state.withLock { $0.status.countFailed() }
            observer?.jobFinished(result)
            forget(claimed.id)
        case .release:
            await queue.release([claimed])
            forget(claimed.id)
        }
    }

    /// Whether the outcome was recorded; if not, the job is forgotten (and a lost lease logged).
    private func settled(_ settlement: Settlement, _ claimed: ClaimedJob) -> Bool {
        switch settlement {
        case .recorded: return true
        case .leaseLost: dropLost(claimed)
        case .unrecorded: forget(claimed.id)
        }
        return false
    }

    /// The job is no longer this worker's: its result goes nowhere.
    private func dropLost(_ claimed: ClaimedJob) {
        logLeaseLost(claimed)
        forget(claimed.id)
    }

    func logLeaseLost(_ claimed: ClaimedJob) {
        logger.warning(
            "lease lost: another worker holds the job now; this worker's result is dropped",
            metadata: [
                "job": "\(claimed.id)", "source": "\(claimed.source)", "attempt": .stringConvertible(claimed.job.attempt),
            ])
    }

    /// A settled job's log fields: the result's (see ``JobResult/logMetadata``), the queue's job ID
    /// and the attempt; `source` is the name the queue knows the job by.
    static func metadata(_ result: JobResult, _ claimed: ClaimedJob) -> Logger.Metadata {
        var metadata = result.logMetadata
        metadata["source"] = .string(claimed.source)
        metadata["job"] = .string(claimed.id)
        metadata["attempt"] = .stringConvertible(claimed.job.attempt)
        return metadata
    }

    private func log(_ change: ClaimPolicy.Change, _ result: JobResult) {
        switch change {
        case .none:
            break
        case .paused(let pause):
            logger.warning(
                "storage is full: no new claims for a while, longer while it stays full; jobs held retry as usual",
                metadata: ["pause_ms": .stringConvertible(Int(pause.milliseconds.rounded())), "error": "\(result.error ?? "")"])
        case .resumed:
            logger.notice("storage takes objects again: claiming resumed")
        }
    }

    /// The job has left this worker: room for another.
    func forget(_ id: String) {
        state.withLock { _ = $0.held.removeValue(forKey: id) }
        wakeup.signal()
        drainWakeup.signal()
    }
}
