// The time a worker loop reads and sleeps on, injected so tests can move it by hand.
import ImagePipe

/// A clock for timers, backoff and deadlines.
///
/// The loop never calls `ContinuousClock` itself: tests drive it with a manual clock, so retries
/// after a backoff, a paused claim and a lease's heartbeat are checked without waiting for them.
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

/// The real clock. Its sleeps wake on Swift's cooperative pool, which nothing in imagepipe blocks
/// (see ``JobPipeline``), so a timer or a heartbeat is never held up by image work.
public struct SystemClock: WorkerClock {
    /// Creates the real clock.
    public init() {}

    public var now: ContinuousClock.Instant { ContinuousClock.now }

    public func sleep(until deadline: ContinuousClock.Instant) async throws {
        try await Task.sleep(until: deadline, clock: .continuous)
    }
}
