// Settling: each decided result completed, retried, failed for good or given back through the queue, logged and reported.
import Foundation
import ImagePipe
import Logging

extension WorkerLoop {
    /// Carries out the state machine's decision on an attempt, logs it and reports how it went.
    func settle(_ claimed: ClaimedJob, _ decision: Machine.Decision, _ result: JobResult) async {
        let started = ContinuousClock.now
        // When the queue recorded the job's end: its span ends there, before its notice may go out.
        var recordedAt: ContinuousClock.Instant?
        let outcome: Machine.Settled
        switch decision {
        case .complete:
            let notice = self.notice(.init(result.status), claimed, result)
            outcome = settled(await queue.complete(claimed, result: result, notice: notice), claimed)
            if outcome == .recorded {
                recordedAt = .now
                logger.info(result.status == .skipped ? "skipped" : "done", metadata: Self.metadata(result, claimed))
                observer?.jobFinished(result)
                kept(notice)
            }
        case .retry(let delay):
            var metadata = Self.metadata(result, claimed)
            metadata["max_attempts"] = .stringConvertible(configuration.retry.maxAttempts)
            metadata["retry_in_ms"] = .stringConvertible(Int(delay.milliseconds.rounded()))
            logger.warning("attempt failed, retrying", metadata: metadata)
            switch await queue.retry(claimed, failure: AttemptRecord(result), after: delay) {
            case .keepHolding:
                outcome = .keptForRetry(after: delay)
                observer?.jobRetrying(result)
            case .requeued:
                outcome = .requeued
                observer?.jobRetrying(result)
            case .leaseLost:
                logLeaseLost(claimed)
                outcome = .leaseLost
            case .unrecorded:
                outcome = .unrecorded
            }
        case .discard:
            let notice = self.notice(.failed, claimed, result)
            outcome = settled(await queue.discard(claimed, failure: AttemptRecord(result), result: result, notice: notice), claimed)
            if outcome == .recorded {
                recordedAt = .now
                // One word per fate: a job refused at its claim failed for good like any other,
                // its error_code saying why (invalid_job_options).
                logger.error("failed", metadata: Self.metadata(result, claimed))
                observer?.jobFinished(result)
                kept(notice)
            }
        case .release:
            await queue.release([claimed])
            outcome = .released
        case .cancel:
            let notice = self.notice(.cancelled, claimed, result)
            outcome = settled(await queue.cancel(claimed, failure: AttemptRecord(result), result: result, notice: notice), claimed)
            if outcome == .recorded {
                recordedAt = .now
                logger.notice("cancelled", metadata: Self.metadata(result, claimed))
                observer?.jobCancelled(result)
                kept(notice)
            }
        }
        if let trace = result.trace { traced(trace, claimed, decision, result, outcome, from: started, to: recordedAt ?? .now) }
        events.send(.settled(claimed.id, outcome))
    }

    /// Ends a traced job's span, a consumer `process` span as OpenTelemetry's messaging conventions
    /// name it, with the settlement's span as its last child, and hands them to the tracer.
    private func traced(
        _ trace: JobTrace, _ claimed: ClaimedJob, _ decision: Machine.Decision, _ result: JobResult, _ outcome: Machine.Settled,
        from started: ContinuousClock.Instant, to end: ContinuousClock.Instant
    ) {
        guard let tracer = pipeline.handler.configuration.tracer else { return }
        var trace = trace
        let settlement: String =
            switch decision {
            case .complete: "complete"
            case .retry: "retry"
            case .discard: "fail"
            case .release: "release"
            case .cancel: "cancel"
            }
        trace.add(
            "settle", from: started, to: end,
            attributes: [("imagepipe.settlement", .string(settlement)), ("imagepipe.recorded", .bool(outcome == .recorded))])
        var attributes = result.spanAttributes
        attributes += [
            ("messaging.system", .string("imagepipe")), ("messaging.operation.type", .string("process")),
            ("messaging.destination.name", .string(queue.displayName)), ("messaging.message.id", .string(claimed.id)),
            ("imagepipe.source", .string(claimed.source)), ("imagepipe.attempt", .int(claimed.job.attempt)),
        ]
        tracer.record(trace.finished("process \(queue.displayName)", kind: .consumer, at: end, attributes: attributes, status: result.spanStatus))
    }

    /// The notice of an outcome about to be recorded, when this worker notifies: the queue keeps it
    /// with the record, so it is sent even if this worker dies right after.
    private func notice(_ event: JobNotice.Event, _ claimed: ClaimedJob, _ result: JobResult) -> JobNotice? {
        notifier.map { _ in JobNotice(event: event, job: claimed.id, result: result) }
    }

    /// Tells the state machine of a notice kept with its record, before the settlement itself: only
    /// now, after the queue recorded it, may it go out, so a notification never tells of a result
    /// the queue could lose.
    private func kept(_ notice: JobNotice?) {
        if let notice { events.send(.noticeKept(notice)) }
    }

    /// Gives jobs back to the queue, logging why.
    func release(_ jobs: [ClaimedJob], _ reason: Machine.ReleaseReason) async {
        await queue.release(jobs)
        var metadata: Logger.Metadata = ["jobs": .stringConvertible(jobs.count), "to": "\(queue.releasePlace)"]
        // Which ones: a shutdown that gives back a few names them (the log has one line per release).
        if jobs.count <= 10 { metadata["job"] = "\(jobs.map(\.id).joined(separator: " "))" }
        switch reason {
        case .unfinished(.requested): logger.warning("stopped at once: returned the jobs in flight", metadata: metadata)
        case .unfinished(.cancelled): logger.warning("shutdown timeout: returned the unfinished jobs", metadata: metadata)
        case .withdrawn: logger.info("shutting down: returned a job that had not started", metadata: metadata)
        case .claimedWhilePaused:
            logger.info("claiming paused: returned the jobs a claim under way brought", metadata: metadata)
        case .waitingRetries, .claimedWhileStopping, .retryWhileStopping:
            logger.debug("returned jobs this worker held", metadata: metadata)
        }
    }

    /// How a settlement went, as the state machine hears it.
    private func settled(_ settlement: Settlement, _ claimed: ClaimedJob) -> Machine.Settled {
        switch settlement {
        case .recorded: return .recorded
        case .leaseLost:
            logLeaseLost(claimed)
            return .leaseLost
        case .unrecorded: return .unrecorded
        }
    }

    func logLeaseLost(_ claimed: ClaimedJob) {
        logger.warning(
            "lease lost: another worker holds the job now; this worker's result is dropped",
            metadata: [
                "job": "\(claimed.id)", "source": "\(claimed.source)", "attempt": .stringConvertible(claimed.job.attempt),
            ])
    }

    /// Logs what the state machine found worth a line.
    func log(_ note: Machine.Note) {
        switch note {
        case .paused(let pause, let code, let error):
            let metadata: Logger.Metadata = [
                "pause_ms": .stringConvertible(Int(pause.milliseconds.rounded())), "error_code": "\(code)", "error": "\(error)",
            ]
            if code == .storageFull {
                logger.warning("storage is full: no new claims for a while, longer while it stays full; jobs held retry as usual", metadata: metadata)
            } else {
                logger.warning(
                    "storage cannot be reached: no new claims for a while, longer while it stays so; jobs held retry as usual",
                    metadata: metadata)
            }
        case .resumed:
            logger.notice("storage takes objects again: claiming resumed")
        case .leaseLost(let claimed):
            logLeaseLost(claimed)
        case .cancelRequested(let claimed):
            logger.notice(
                "cancel requested: the job stops at its next safe point",
                metadata: ["job": "\(claimed.id)", "source": "\(claimed.source)", "attempt": .stringConvertible(claimed.job.attempt)])
        case .queueEmpty(let later) where later > 0:
            logger.notice(
                "no job is due: stopping; jobs queued for later stay waiting",
                metadata: ["queue": "\(queue.displayName)", "later": .stringConvertible(later)])
        case .queueEmpty:
            logger.notice("the queue is empty: stopping", metadata: ["queue": "\(queue.displayName)"])
        case .awaitingOthers(let count):
            logger.notice(
                "nothing is left here, but jobs other workers hold may come back: waiting until their claims are renewed or taken back",
                metadata: ["queue": "\(queue.displayName)", "jobs": .stringConvertible(count)])
        case .draining:
            logger.notice("shutting down: no new claims, waiting for jobs in flight")
        case .stoppingNow:
            logger.notice("stopping now: every job goes back", metadata: ["to": "\(queue.releasePlace)"])
        case .noticesLeft(let count):
            logger.notice(
                "the undelivered notifications stay with the queue: the next worker with --notify-url sends them",
                metadata: ["notifications": .stringConvertible(count)])
        }
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
}
