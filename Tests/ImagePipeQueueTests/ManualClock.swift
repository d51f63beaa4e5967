import Foundation
import ImagePipeQueue
import Synchronization

/// A clock that moves only when a test advances it: sleepers wake when their deadline is reached.
final class ManualClock: WorkerClock {
    private struct Sleeper {
        let deadline: ContinuousClock.Instant
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now = ContinuousClock.now
        var sleepers: [Int: Sleeper] = [:]
        var next = 0
    }

    private let state = Mutex(State())

    var now: ContinuousClock.Instant { state.withLock { $0.now } }

    /// Sleepers waiting for a later instant.
    var sleeping: Int { state.withLock { $0.sleepers.count } }

    /// Sleepers that `advance(by: duration)` would wake.
    func sleepers(dueWithin duration: Duration) -> Int {
        state.withLock { state in state.sleepers.values.count { $0.deadline <= state.now + duration } }
    }

    func sleep(until deadline: ContinuousClock.Instant) async throws {
        let id = state.withLock { state in
            state.next += 1
            return state.next
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let outcome = state.withLock { state -> Result<Bool, CancellationError> in
                    if Task.isCancelled { return .failure(CancellationError()) }
                    if deadline <= state.now { return .success(true) }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return .success(false)
                }
                switch outcome {
                case .success(true): continuation.resume()
                case .success(false): break
                case .failure(let error): continuation.resume(throwing: error)
                }
            }
        } onCancel: {
            state.withLock { $0.sleepers.removeValue(forKey: id) }?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves time on and wakes every sleeper whose deadline has come.
    func advance(by duration: Duration) {
        let due = state.withLock { state -> [Sleeper] in
            state.now += duration
            let due = state.sleepers.filter { $0.value.deadline <= state.now }
            for id in due.keys { state.sleepers[id] = nil }
            return Array(due.values)
        }
        for sleeper in due { sleeper.continuation.resume() }
    }
}
