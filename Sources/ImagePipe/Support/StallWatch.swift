// Blocking file-system calls that do not return: a frozen disk or a hung network mount, said aloud.
import Dispatch
import Foundation
public import Logging
import Synchronization

/// The blocking calls on the file systems a worker writes (its queue directory, its local
/// destination) while they run, so that one that does not return is noticed.
///
/// A file system that is frozen (`fsfreeze`, a snapshot tool that never thawed), shut down, or a
/// network mount whose server went away, blocks every write to it, and the thread that made it,
/// without an error or a time-out: the worker would go quiet for as long as it lasts. The calls that
/// write (each round of syncs, each durable write and move, each blocking call async code hands to
/// ``BlockingIO``) are registered here while they run; ``startLogging(_:after:)`` logs any that has
/// not returned after a while, and again when it does, and the readiness check ``stalled(after:)``
/// fails meanwhile (`/readyz`).
public enum StallWatch {
    /// One call that has not returned.
    public struct Call: Sendable {
        /// What it is: "a round of 12 syncs", "moving a file into /srv/queue/done".
        public let what: String
        /// When it started.
        public let since: ContinuousClock.Instant
    }

    private struct State {
        var next: UInt64 = 0
        var running: [UInt64: Call] = [:]
    }

    private static let state = Mutex(State())

    /// How long a call may run before it is taken to be stalled: a round of syncs of a loaded disk
    /// takes seconds at worst, a frozen one forever.
    public static let threshold: Duration = .seconds(30)

    /// Runs `body`, registered as `what` while it runs.
    public static func watch<T, Failure: Error>(
        _ what: @autoclosure () -> String, _ body: () throws(Failure) -> T
    ) throws(Failure) -> T {
        let call = Call(what: what(), since: .now)
        let id = state.withLock { state -> UInt64 in
            state.next += 1
            state.running[state.next] = call
            return state.next
        }
        defer { _ = state.withLock { $0.running.removeValue(forKey: id) } }
        return try body()
    }

    /// The call that has run longest, if it has run at least `threshold`.
    public static func stalled(after threshold: Duration = threshold) -> Call? {
        let now = ContinuousClock.now
        return state.withLock { $0.running.values.min { $0.since < $1.since } }.flatMap { now - $0.since >= threshold ? $0 : nil }
    }

    private static let logging = Mutex(false)

    /// Starts, once per process, a thread that logs each call still running after `threshold`
    /// (checked every `threshold` / 6), and again when it returns.
    public static func startLogging(_ logger: Logger, after threshold: Duration = threshold) {
        guard
            logging.withLock({ started in
                defer { started = true }
                return !started
            })
        else { return }
        let thread = Thread {
            var reported: [UInt64: Call] = [:]
            while true {
                Thread.sleep(forTimeInterval: max(0.05, Double(threshold.components.seconds) / 6 + Double(threshold.components.attoseconds) / 6e18))
                let now = ContinuousClock.now
                let running = state.withLock { $0.running }
                for (id, call) in running where reported[id] == nil && now - call.since >= threshold {
                    reported[id] = call
                    logger.warning(
                        "a file-system call has not returned: its file system may be frozen or shut down, or a network mount hung",
                        metadata: ["call": "\(call.what)", "seconds": "\(Int((now - call.since).components.seconds))"])
                }
                for (id, call) in reported where running[id] == nil {
                    reported[id] = nil
                    logger.notice(
                        "a file-system call that had stalled returned",
                        metadata: ["call": "\(call.what)", "seconds": "\(Int((now - call.since).components.seconds))"])
                }
            }
        }
        thread.name = "imagepipe.stall-watch"
        thread.start()
    }
}
