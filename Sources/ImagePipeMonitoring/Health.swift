// What /healthz and /readyz answer: liveness from the worker, readiness from the last checks and whether a stop was asked for.
public import CoreMetrics
import Foundation
import Synchronization

/// The worker's health as the monitoring endpoints report it.
///
/// Alive (`/healthz`) when the liveness test says so: for a worker, that its loop still looks for
/// work (or is draining after a stop request). Ready (`/readyz`) when every readiness check
/// passed at its last run and no stop was asked for: a load balancer or orchestrator stops sending
/// work to a worker that is draining or cut off from its queue or storage.
public final class Health: Sendable {
    private struct State {
        /// The last outcome of each check by name: nil when it passed, else why not.
        var failures: [String: String?] = [:]
    }

    private let checkNames: [String]
    private let liveness: @Sendable () -> Bool
    private let stopRequested: @Sendable () -> Bool
    private let state = Mutex(State())
    private let readyGauge: Gauge

    /// Creates the health of a process whose readiness rests on the checks named `checks` (ready
    /// only once each has passed, and never once `stopRequested` says a stop was asked for), alive
    /// while `liveness` says so.
    public init(
        checks: [String], liveness: @escaping @Sendable () -> Bool = { true },
        stopRequested: @escaping @Sendable () -> Bool = { false }, factory: any MetricsFactory = MetricsSystem.factory
    ) {
        self.checkNames = checks
        self.liveness = liveness
        self.stopRequested = stopRequested
        self.readyGauge = Gauge(label: MetricCatalogue.ready.name, factory: factory)
        readyGauge.record(0)
    }

    /// Whether the worker is alive.
    public var isAlive: Bool { liveness() }

    /// Records the outcome of a check: nil when it passed, else why not.
    public func record(_ check: String, failure: String?) {
        state.withLock { state in state.failures[check] = .some(failure) }
        readyGauge.record(problems.isEmpty ? 1 : 0)
    }

    /// Whether the check named `check` failed at its last run.
    public func failing(_ check: String) -> Bool {
        state.withLock { state in
            if case .some(.some) = state.failures[check] { true } else { false }
        }
    }

    /// Why the worker is not ready (empty when it is): one line per problem.
    public var problems: [String] {
        let stopping = stopRequested()
        if stopping { readyGauge.record(0) }
        return state.withLock { Self.problems($0, checkNames, stopping: stopping) }
    }

    private static func problems(_ state: State, _ names: [String], stopping: Bool) -> [String] {
        var problems: [String] = stopping ? ["stopping: a stop was asked for"] : []
        for name in names {
            switch state.failures[name] {
            case .none: problems.append("\(name): not checked yet")
            case .some(.some(let reason)): problems.append("\(name): \(reason)")
            case .some(.none): break
            }
        }
        return problems
    }
}
