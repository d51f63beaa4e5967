// One notification's delivery: signed POSTs, retried with backoff on 5xx, 408, 429, timeouts and connection errors until its deadline.
import Foundation
import ImagePipe
import Logging

extension WebhookNotifier {
    /// How one attempt went.
    enum Attempt: Equatable {
        case delivered
        /// Worth another try: the receiver or the network may recover.
        case retryable(String)
        /// Not worth another: the receiver refused it (4xx) or the URL cannot work.
        case refused(String)
    }

    /// Tries a notice on `lane` until it is delivered, refused or its deadline (counted from when
    /// it was handed over) passes, each attempt blocking the lane (libcurl); the backoff between
    /// attempts is the next attempt scheduled on the lane, which stays with the notice meanwhile.
    /// A notice the notifier stopped before it was settled is left to whoever keeps it.
    func deliver(_ taken: Pending, attempt number: Int, on lane: Int) {
        let notice = taken.notice
        if let cutoff, ContinuousClock.now >= cutoff {
            // Hurried (an interrupted batch): what is still queued is not tried again.
            logger.error(
                "notification given up: the run was interrupted; the job's result is recorded",
                metadata: ["job": "\(notice.job)", "event": "\(notice.event.rawValue)", "url": "\(Self.redacted(configuration.url))"])
            NotificationMetrics.finished(delivered: false)
            return finished(taken, settled: true, on: lane)
        }
        let outcome = attempt(notice.body(), traceparent: notice.traceparent.flatMap(TraceParent.init), number: number)
        var metadata: Logger.Metadata = [
            "job": "\(notice.job)", "event": "\(notice.event.rawValue)", "url": "\(Self.redacted(configuration.url))",
            "attempt": .stringConvertible(number),
        ]
        switch outcome {
        case .delivered:
            logger.debug("notified", metadata: metadata)
            NotificationMetrics.finished(delivered: true)
            finished(taken, settled: true, on: lane)
        case .refused(let reason):
            metadata["error"] = "\(reason)"
            logger.error("notification refused: not sent again; the job's result is recorded", metadata: metadata)
            NotificationMetrics.finished(delivered: false)
            finished(taken, settled: true, on: lane)
        case .retryable(let reason):
            metadata["error"] = "\(reason)"
            let delay = backoff(afterAttempt: number)
            if isStopped { return finished(taken, settled: false, on: lane) }
            let ownDeadline = taken.since + configuration.deadline
            let deadline = cutoff.map { min($0, ownDeadline) } ?? ownDeadline
            guard ContinuousClock.now + delay < deadline else {
                logger.error("notification failed until its deadline: given up; the job's result is recorded", metadata: metadata)
                NotificationMetrics.finished(delivered: false)
                return finished(taken, settled: true, on: lane)
            }
            metadata["retry_in_ms"] = .stringConvertible(Int(delay.milliseconds.rounded()))
            logger.warning("notification attempt failed, retrying", metadata: metadata)
            NotificationMetrics.retry()
            lanes[lane].asyncAfter(deadline: .now() + delay.timeInterval) {
                // Stopped meanwhile: the notice is left to whoever keeps it (another worker may be sending it).
                if self.isStopped { return self.finished(taken, settled: false, on: lane) }
                self.deliver(taken, attempt: number + 1, on: lane)
            }
        }
    }

    /// One signed POST, stamped with the time it is sent. A traced job's carries `traceparent`:
    /// this POST's own span when this worker traces, else the job span's as the notice kept it.
    func attempt(_ body: Data, traceparent job: TraceParent? = nil, number: Int = 1) -> Attempt {
        let timestamp = Int(Date().timeIntervalSince1970)
        var headers = [
            ("Content-Type", "application/json"),
            (NotificationSignature.headerName, signature.header(body: body, timestamp: timestamp)),
        ]
        let tracer = job == nil ? nil : configuration.tracer
        let span = SpanID.random()
        if let job {
            headers.append(
                ("traceparent", tracer == nil ? job.description : TraceParent(traceID: job.traceID, spanID: span, sampled: true).description))
        }
        let start = ContinuousClock.now
        let request = HTTPRequest(method: "POST", url: configuration.url, headers: headers, body: body)
        let outcome: Attempt
        var status: Int?
        do {
            let response = try client.perform(request)
            status = response.status
            // A timeout or a rate limit passes like an outage; other 4xx answers will not change.
            outcome =
                response.isSuccess
                ? .delivered
                : response.status >= 500 || response.status == 408 || response.status == 429
                    ? .retryable("HTTP \(response.status)") : .refused("HTTP \(response.status)")
        } catch {
            outcome = error.isRetryable ? .retryable(error.message) : .refused(error.message)
        }
        if let tracer, let job {
            var attributes: [(String, Span.Value)] = [
                ("http.request.method", .string("POST")), ("url.full", .string(Self.redacted(configuration.url))),
                ("http.request.resend_count", .int(number - 1)),
            ]
            if let status { attributes.append(("http.response.status_code", .int(status))) }
            var spanStatus = Span.Status.unset
            switch outcome {
            case .delivered: break
            case .retryable(let reason), .refused(let reason): spanStatus = .error(reason)
            }
            tracer.record([
                Span(
                    name: "POST", kind: .client, traceID: job.traceID, spanID: span, parent: job.spanID, start: WallClock.nanos(at: start),
                    end: WallClock.now, attributes: attributes, status: spanStatus)
            ])
        }
        return outcome
    }

    /// Between half and all of a ceiling that doubles from ``Configuration/firstDelay`` up to
    /// ``Configuration/maxDelay``: the jitter keeps many workers retrying one receiver out of step.
    func backoff(afterAttempt number: Int) -> Duration {
        let ceiling = min(configuration.maxDelay.timeInterval, configuration.firstDelay.timeInterval * pow(2, Double(number - 1)))
        return .milliseconds(Int((Double.random(in: 0.5...1) * ceiling * 1000).rounded()))
    }
}
