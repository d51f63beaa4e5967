// The watch command's stop signals: the first stops gracefully, a second SIGTERM or SIGINT at once, and the process always ends.
import Dispatch
import Foundation
import Logging
import Synchronization
import ImagePipe

/// Turns SIGTERM, SIGINT and SIGHUP into a graceful stop, then an immediate one.
///
/// SIGHUP counts as a stop request because it is what a closing terminal or ssh session sends: the
/// worker must give its jobs back rather than die holding them. After the first signal, a second
/// SIGTERM or SIGINT (an impatient Ctrl-C, a supervisor insisting) stops at once. Whatever happens
/// in between (a job stuck in the kernel, a library's clean-up waiting for it), a watchdog ends the
/// process a little after the shutdown timeout. The signals must be blocked in every thread
/// beforehand (see `blockStopSignals()`), so that they reach these Dispatch sources.
final class ShutdownSignals: Sendable {
    /// How long past its deadline a stop may run before the watchdog ends the process.
    static let grace: Duration = .seconds(3)

    private let queue = DispatchQueue(label: "imagepipe.signals")
    private let received = Mutex(0)
    // Dispatch sources are thread-safe; the protocol existential is just not marked Sendable.
    nonisolated(unsafe) private var sources: [any DispatchSourceSignal] = []

    /// Starts listening: `graceful` runs on the first signal, `immediate` on a later SIGTERM or SIGINT.
    init(
        shutdownTimeout: Duration, logger: Logger,
        graceful: @escaping @Sendable () -> Void, immediate: @escaping @Sendable () -> Void
    ) {
        for signal in [SIGTERM, SIGINT, SIGHUP] {
            let source = DispatchSource.makeSignalSource(signal: signal, queue: queue)
            source.setEventHandler { [weak self] in
                guard let self else { return }
                let count = received.withLock { count in
                    count += 1
                    return count
                }
                let name = Self.name(of: signal)
                if count == 1 {
                    logger.notice("\(name) received: stopping gracefully (send SIGTERM or SIGINT again to stop at once)")
                    Self.exitIfStillRunning(after: shutdownTimeout + Self.grace, logger: logger)
                    graceful()
                } else if signal != SIGHUP {
                    logger.notice("\(name) received again: stopping at once")
                    Self.exitIfStillRunning(after: Self.grace, logger: logger)
                    immediate()
                }
            }
            source.resume()
            sources.append(source)
        }
    }

    deinit {
        for source in sources { source.cancel() }
    }

    /// Ends the process after `delay` unless it has ended by then. A plain thread, so that neither a
    /// starved Dispatch pool nor Swift's cooperative pool can hold it up.
    private static func exitIfStillRunning(after delay: Duration, logger: Logger) {
        let thread = Thread {
            Thread.sleep(forTimeInterval: delay.timeInterval)
            logger.critical(
                "still running \(delay.formattedSeconds) after the stop request: exiting now; jobs left in processing/ go back to the inbox when a worker starts"
            )
            _exit(1)
        }
        thread.name = "imagepipe.stop-watchdog"
        thread.start()
    }

    private static func name(of signal: Int32) -> String {
        switch signal {
        case SIGTERM: "SIGTERM"
        case SIGINT: "SIGINT"
        case SIGHUP: "SIGHUP"
        default: "signal \(signal)"
        }
    }
}
