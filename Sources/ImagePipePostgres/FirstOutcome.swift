// The first of several racing outcomes, handed to one continuation exactly once.
import Synchronization

/// Resumes a continuation with whichever outcome comes first; later ones are dropped.
final class FirstOutcome<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var outcome: Result<T, any Error>?
        var resumed = false
        var timer: Task<Void, Never>?
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

    /// Offers an outcome; only the first counts, and it ends the timer racing it.
    func settle(_ outcome: Result<T, any Error>) {
        let (continuation, timer) = state.withLock { state -> (CheckedContinuation<T, any Error>?, Task<Void, Never>?) in
            guard state.outcome == nil else { return (nil, nil) }
            state.outcome = outcome
            defer { state.timer = nil }
            guard let continuation = state.continuation else { return (nil, state.timer) }
            state.resumed = true
            return (continuation, state.timer)
        }
        timer?.cancel()
        continuation?.resume(with: outcome)
    }

    /// A timer (a task that settles a timeout) racing the outcome: cancelled as soon as an outcome
    /// comes, so an answer in time leaves no task sleeping out the whole timeout, where thousands
    /// of statements a second would pile up thousands of them.
    func race(_ timer: Task<Void, Never>) {
        let settled = state.withLock { state -> Bool in
            if state.outcome != nil { return true }
            state.timer = timer
            return false
        }
        if settled { timer.cancel() }
    }
}
