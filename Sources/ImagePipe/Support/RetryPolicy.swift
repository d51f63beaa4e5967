// How often and how long to wait before trying again something that failed for a reason that may pass.

/// Exponential backoff with full jitter, up to a number of attempts.
///
/// The wait after attempt n is random between zero and `min(baseDelay × 2ⁿ⁻¹, maxDelay)`: full
/// jitter spreads the retries of many workers hit by the same outage instead of synchronising them.
/// The queue uses it for whole jobs, the object stores for single requests.
public struct RetryPolicy: Sendable, Hashable {
    /// Attempts in all, the first included.
    public var maxAttempts: Int
    /// The backoff ceiling after the first failure; it doubles with each further failure.
    public var baseDelay: Duration
    /// The longest wait.
    public var maxDelay: Duration

    /// Creates a policy; the default is 5 attempts, 1 s doubling up to 60 s.
    public init(maxAttempts: Int = 5, baseDelay: Duration = .seconds(1), maxDelay: Duration = .seconds(60)) {
        self.maxAttempts = max(1, maxAttempts)
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
    }

    /// Whether something that failed on `attempt` (from 1) gets another one.
    public func shouldRetry(afterAttempt attempt: Int) -> Bool { attempt < maxAttempts }

    /// The wait after a failed `attempt`: uniformly random between zero and the backoff ceiling.
    public func delay(afterAttempt attempt: Int, random: Double = Double.random(in: 0..<1)) -> Duration {
        let ceiling = min(maxDelay, baseDelay * (1 << min(30, max(0, attempt - 1))))
        return ceiling * random
    }
}
