// The stop signals of `batch` and `watch`, one rule for both: graceful first, at once on the second.
import Dispatch
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// SIGTERM, SIGINT and SIGHUP for a command that runs as a service group.
///
/// The first signal is logged and starts the group's graceful shutdown, whose deadlines the group
/// owns; a second SIGTERM or SIGINT (an impatient Ctrl-C, a supervisor insisting), which the group has
/// no notion of, runs the command's `immediate` stop. Before the command's work has started (a batch
/// still reading its list), a signal ends the process at once: there is nothing to let finish.
/// (The group's own signal handling would end the process before the first signal's line is logged.)
///
/// SIGHUP counts as a stop request because it is what a closing terminal or ssh session sends: the
/// command must give its work back rather than die holding it; a second one is the same terminal
/// closing, not insistence. The signals must be blocked in every thread beforehand (see
/// `blockStopSignals()`), so that they reach Dispatch sources.
final class StopSignals: Sendable {
    /// How long a cancelled service may take to give its work back before the group ends the process.
    static let cancellationGrace: Duration = .seconds(5)

    /// What the next signal does.
    enum Stage {
        /// Nothing has started that a stop could let finish: a signal ends the process at once.
        case starting
        /// The first signal asks the group for a graceful shutdown (remembered until the group is known).
        case running
        /// A graceful shutdown is under way: SIGTERM or SIGINT stops at once.
        case stopping
    }

    private struct State {
        var stage: Stage
        var group: ServiceGroup?
        var immediate: (@Sendable () -> Void)?
        /// A graceful stop asked for before the group was known.
        var gracefulPending = false
    }

    private let state: Mutex<State>
    private let count = Atomic<Int>(0)
    private let queue = DispatchQueue(label: "imagepipe.signals")
    // Dispatch sources are thread-safe; the protocol existential is just not marked Sendable.
    nonisolated(unsafe) private var sources: [any DispatchSourceSignal] = []

    /// Starts listening at `stage`; `graceful` says in the log what a graceful stop does.
    init(logger: Logger, stage: Stage, graceful: String) {
        state = Mutex(State(stage: stage))
        for signal in [SIGTERM, SIGINT, SIGHUP] {
            let source = DispatchSource.makeSignalSource(signal: signal, queue: queue)
            source.setEventHandler { [weak self] in
                self?.handle(signal, logger: logger, graceful: graceful)
            }
            source.resume()
            sources.append(source)
        }
    }

    deinit {
        for source in sources { source.cancel() }
    }

    /// The group whose graceful shutdown the first signal starts, and the stop of a second one.
    func govern(_ group: ServiceGroup, immediate: @escaping @Sendable () -> Void) {
        let pending = state.withLock { state in
            state.group = group
            state.immediate = immediate
            defer { state.gracefulPending = false }
            return state.gracefulPending
        }
        if pending { Task { await group.triggerGracefulShutdown() } }
    }

    /// The command's work has started: from now on the first signal lets it finish.
    func workStarted() {
        state.withLock { state in
            if case .starting = state.stage { state.stage = .running }
        }
    }

    /// Stop signals received so far.
    var received: Int { count.load(ordering: .relaxed) }

    /// What one signal does, decided under the lock and carried out outside it.
    private enum Response {
        case exitAtOnce, graceful(ServiceGroup?), immediate((@Sendable () -> Void)?), ignored
    }

    private func handle(_ signal: Int32, logger: Logger, graceful: String) {
        count.add(1, ordering: .relaxed)
        let name = Self.name(of: signal)
        let response: Response = state.withLock { state in
            switch state.stage {
            case .starting:
                return .exitAtOnce
            case .running:
                state.stage = .stopping
                if state.group == nil { state.gracefulPending = true }
                return .graceful(state.group)
            case .stopping:
                return signal == SIGHUP ? .ignored : .immediate(state.immediate)
            }
        }
        switch response {
        case .exitAtOnce:
            logger.notice("\(name) received before any work started: stopping at once")
            // _exit, not exit: exit's clean-up of libraries races the threads still setting up.
            _exit(130)
        case .graceful(let group):
            logger.notice("\(name) received: \(graceful) (send SIGTERM or SIGINT again to stop at once)")
            if let group { Task { await group.triggerGracefulShutdown() } }
        case .immediate(let stop):
            logger.notice("\(name) received again: stopping at once")
            // Before the group is known there is nothing to give back.
            guard let stop else { _exit(130) }
            stop()
        case .ignored:
            logger.debug("\(name) received again: the graceful stop goes on")
        }
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
