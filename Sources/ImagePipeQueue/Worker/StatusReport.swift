// The worker's counters and its periodic status line.
import Foundation

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

    /// The line for now, with the rate since the previous line.
    mutating func line(waiting: Int?, inFlight: Int, retrying: Int, at now: ContinuousClock.Instant) -> String {
        let finished = done + failed
        let seconds = (now - last.at).timeInterval
        let rate = seconds > 0 ? Double(finished - last.finished) / seconds : 0
        last = (now, finished)
        let waitingPart = waiting.map { "\($0) waiting, " } ?? ""
        return "status: \(waitingPart)\(inFlight) in flight, \(retrying) retrying, \(done) done, \(failed) failed, "
            + "\(String(format: "%.2f", rate)) images/s"
    }
}
