// The first of several racing outcomes, handed to one continuation exactly once.
import Synchronization

/// Resumes a continuation with whichever outcome comes first; later ones are dropped.
final class FirstOutcome<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var outcome: Result<T, any Error>?
        var resumed = false
    }

    private let state = Mutex(State())

    /// Where the outcome goes (at once if one has come already).
    func deliver(to continuation: CheckedContinuation<T, any Error>) {
        let ready = state.withLock { state -> Result<T, any Error>? in
            guard let outcome = state.outcome, !state.resumed else {
                state.continuation = continuation
                return nil
            }
            state.resumed = true
            return outcome
        }
        if let ready { continuation.resume(with: ready) }
    }

    /// Offers an outcome; only the first counts.
    func settle(_ outcome: Result<T, any Error>) {
        let continuation = state.withLock { state -> CheckedContinuation<T, any Error>? in
            guard state.outcome == nil else { return nil }
            state.outcome = outcome
            guard let continuation = state.continuation else { return nil }
            state.resumed = true
            return continuation
        }
        continuation?.resume(with: outcome)
    }
}
