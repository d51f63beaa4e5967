// The watch command's stop signals: the first starts the service group's graceful shutdown, a second SIGTERM or SIGINT stops at once.
import Dispatch
import Foundation
import Logging
import Synchronization

/// The first SIGTERM, SIGINT or SIGHUP is logged and starts the service group's graceful shutdown,
/// whose deadlines the group owns; a second SIGTERM or SIGINT (an impatient Ctrl-C, a supervisor
/// insisting), which the group has no notion of, stops the worker at once, giving every job back.
/// (The group's own signal handling would end the process before the first signal's line is logged.)
///
/// SIGHUP counts as a stop request because it is what a closing terminal or ssh session sends: the
/// worker must give its jobs back rather than die holding them. The signals must be blocked in
/// every thread beforehand (see `blockStopSignals()`), so that they reach Dispatch sources.
final class ShutdownSignals: Sendable {
    /// How long a cancelled worker may take to give its jobs back before the service group ends
    /// the process.
    static let cancellationGrace: Duration = .seconds(5)

    private let queue = DispatchQueue(label: "imagepipe.signals")
    private let count = Atomic<Int>(0)
    // Dispatch sources are thread-safe; the protocol existential is just not marked Sendable.
    nonisolated(unsafe) private var sources: [any DispatchSourceSignal] = []

    /// Starts listening: `graceful` runs on the first signal, `immediate` on a later SIGTERM or SIGINT.
    init(logger: Logger, graceful: @escaping @Sendable () -> Void, immediate: @escaping @Sendable () -> Void) {
        for signal in [SIGTERM, SIGINT, SIGHUP] {
            let source = DispatchSource.makeSignalSource(signal: signal, queue: queue)
            source.setEventHandler { [weak self] in
                guard let self else { return }
                let received = count.add(1, ordering: .relaxed).newValue
                let name = Self.name(of: signal)
                if received == 1 {
                    logger.notice("\(name) received: stopping gracefully (send SIGTERM or SIGINT again to stop at once)")
                    graceful()
                } else if signal != SIGHUP {
                    logger.notice("\(name) received again: stopping at once")
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

    /// Stop signals received so far.
    var received: Int { count.load(ordering: .relaxed) }

    private static func name(of signal: Int32) -> String {
        switch signal {
        case SIGTERM: "SIGTERM"
        case SIGINT: "SIGINT"
        case SIGHUP: "SIGHUP"
        default: "signal \(signal)"
        }
    }
}
