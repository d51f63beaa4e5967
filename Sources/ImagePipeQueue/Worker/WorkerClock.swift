// The time a worker loop reads and sleeps on, injected so tests can move it by hand.
import Dispatch
import Synchronization
import ImagePipe

/// A clock for timers, backoff and deadlines.
///
/// The loop never calls `ContinuousClock` itself: tests drive it with a manual clock, so retries
/// after a backoff, a paused claim and a shutdown deadline are checked without waiting for them.
public protocol WorkerClock: Sendable {
    /// The current instant.
    var now: ContinuousClock.Instant { get }
    /// Suspends until `deadline`; throws `CancellationError` when the task is cancelled first.
    func sleep(until deadline: ContinuousClock.Instant) async throws
}

extension WorkerClock {
    /// Suspends for `duration`.
    public func sleep(for duration: Duration) async throws {
        try await sleep(until: now + duration)
    }
}

/// The real clock, whose sleeps end on a Dispatch queue of their own.
///
/// `Task.sleep` wakes its task through Swift's global executor. On Linux that pool has one thread
/// per core and does not grow while threads block, so code blocking it (a synchronous caller, a
/// library) would hold up every timer of the loop, heartbeats included. A private serial queue
/// gets a thread whenever it has work.
public struct SystemClock: WorkerClock {
    private static let timers = DispatchQueue(label: "imagepipe.clock")

    /// Creates the real clock.
    public init() {}

    public var now: ContinuousClock.Instant { ContinuousClock.now }

    public func sleep(until deadline: ContinuousClock.Instant) async throws {
        let sleeper = Sleeper()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                sleeper.begin(continuation)
                Self.timers.asyncAfter(deadline: .now() + max(0, (deadline - ContinuousClock.now).timeInterval)) {
                    sleeper.end(nil)
                }
            }
        } onCancel: {
            sleeper.end(CancellationError())
        }
    }
}

/// One sleep's continuation, resumed once: by its timer or by cancellation, whichever comes first.
private final class Sleeper: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Void, any Error>?
        var ended: (any Error)??
    }

    private let state = Mutex(State())

    func begin(_ continuation: CheckedContinuation<Void, any Error>) {
        let ended = state.withLock { state -> (any Error)?? in
            if let ended = state.ended { return ended }
            state.continuation = continuation
            return nil
        }
        if let ended { resume(continuation, ended) }
    }

    func end(_ error: (any Error)?) {
        let continuation = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            guard state.ended == nil else { return nil }
            state.ended = .some(error)
            defer { state.continuation = nil }
            return state.continuation
        }
        if let continuation { resume(continuation, error) }
    }

    private func resume(_ continuation: CheckedContinuation<Void, any Error>, _ error: (any Error)?) {
        if let error { continuation.resume(throwing: error) } else { continuation.resume() }
    }
}
