// The AWS SDKs' standard retry mode as a RetryPolicy.
public import ImagePipe

extension RetryPolicy {
    /// The AWS SDKs' standard mode: 3 attempts, backoff ceiling 1 s doubling up to 20 s, full jitter.
    public static let standard = RetryPolicy(maxAttempts: 3, baseDelay: .seconds(1), maxDelay: .seconds(20))
}
