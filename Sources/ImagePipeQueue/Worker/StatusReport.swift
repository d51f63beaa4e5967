// The worker's periodic status line.
import Foundation
import Logging
import ImagePipe

/// Formats the status line, with the rate since the previous one.
struct StatusReport: Sendable {
    private var last: (at: ContinuousClock.Instant, done: Int)

    init(startedAt: ContinuousClock.Instant) {
        last = (startedAt, 0)
    }

    /// The status line's fields for now (`waiting` only when known). The rate counts only jobs
    /// recorded done since the previous line: failures are no work done.
    mutating func fields(
        waiting: Int?, statistics: WorkerLoop.Statistics, at now: ContinuousClock.Instant
    ) -> Logger.Metadata {
        let seconds = (now - last.at).timeInterval
        let rate = seconds > 0 ? Double(statistics.done - last.done) / seconds : 0
        last = (now, statistics.done)
        var fields: Logger.Metadata = [
            "in_flight": .stringConvertible(statistics.inFlight), "retrying": .stringConvertible(statistics.retrying),
            // The words and counts of `queue status`: done (skipped ones too), failed (for good), cancelled.
            "done": .stringConvertible(statistics.done), "failed": .stringConvertible(statistics.failed),
            "cancelled": .stringConvertible(statistics.cancelled),
            "images_per_s": .stringConvertible((rate * 100).rounded() / 100),
        ]
        if let waiting { fields["waiting"] = .stringConvertible(waiting) }
        return fields
    }
}
