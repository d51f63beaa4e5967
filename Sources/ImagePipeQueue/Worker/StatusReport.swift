// The worker's counters and its periodic status line.
import Foundation
import Logging
import ImagePipe

/// Counts finished jobs and formats the status line.
struct StatusReport: Sendable {
    /// Jobs recorded as done.
    private(set) var done = 0
    /// Jobs recorded as failed for good.
    private(set) var failed = 0
    private var last: (at: ContinuousClock.Instant, finished: Int)

    init(startedAt: ContinuousClock.Instant) {
        last = (startedAt, 0)
    }

    mutating func countDone() { done += 1 }
    mutating func countFailed() { failed += 1 }

    /// The status line's fields for now, with the rate since the previous line (`waiting` only when known).
    mutating func fields(waiting: Int?, inFlight: Int, retrying: Int, at now: ContinuousClock.Instant) -> Logger.Metadata {
        let finished = done + failed
        let seconds = (now - last.at).timeInterval
        let rate = seconds > 0 ? Double(finished - last.finished) / seconds : 0
        last = (now, finished)
        var fields: Logger.Metadata = [
            "in_flight": .stringConvertible(inFlight), "retrying": .stringConvertible(retrying),
            "done": .stringConvertible(done), "failed": .stringConvertible(failed),
            "images_per_s": .stringConvertible((rate * 100).rounded() / 100),
        ]
        if let waiting { fields["waiting"] = .stringConvertible(waiting) }
        return fields
    }
}
