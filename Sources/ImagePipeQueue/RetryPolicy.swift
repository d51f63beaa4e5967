// How often and how long to wait before retrying a job that failed for a reason that may pass.

/// Exponential backoff with full jitter, up to a number of attempts.
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

    /// Whether a job that failed transiently on `attempt` gets another one.
    public func shouldRetry(afterAttempt attempt: Int) -> Bool { attempt < maxAttempts }

    /// The wait before the attempt after `attempt`: uniformly random between zero and the backoff
    /// ceiling, so that many jobs failing together do not retry together.
    public func delay(afterAttempt attempt: Int, random: Double = Double.random(in: 0...1)) -> Duration {
        let ceiling = min(maxDelay, baseDelay * (1 << min(30, max(0, attempt - 1))))
        return ceiling * random
    }
}
