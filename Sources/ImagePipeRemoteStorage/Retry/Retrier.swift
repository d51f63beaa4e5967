// Runs one request with the standard retry mode and logs every retry.
import Foundation
import ImagePipe
import Logging

/// Repeats an attempt while it fails in a retryable way, the policy allows more attempts and the quota pays.
struct Retrier: Sendable {
    let policy: RetryPolicy
    let quota: RetryQuota
    /// The service retried requests go to (`s3`, `supabase`), for the retry counter.
    let service: String
    let logger: Logger

    /// Runs `attempt` (given the attempt number from 1) until it succeeds or must give up.
    ///
    /// - Throws: the last failure and how many attempts were made.
    func run<T>(
        _ what: @autoclosure () -> String,
        _ attempt: (Int) throws(RequestFailure) -> T
    ) throws(RetryExhausted) -> T {
        var number = 1
        var spent = 0
        while true {
            do {
                let value = try attempt(number)
                quota.release(spent > 0 ? spent : RetryQuota.successRefund)
                return value
            } catch {
                guard error.isRetryable, policy.shouldRetry(afterAttempt: number),
                    let cost = quota.acquire(timeout: error.isTimeout)
                else {
                    throw RetryExhausted(failure: error, attempts: number)
                }
                spent += cost
                let delay = policy.delay(afterAttempt: number)
                logger.warning(
                    "retrying a storage request",
                    metadata: [
                        "request": "\(what())", "error": "\(error)", "attempt": .stringConvertible(number + 1),
                        "max_attempts": .stringConvertible(policy.maxAttempts), "retry_in_ms": .stringConvertible(Int(delay.milliseconds.rounded())),
                    ])
                RequestMetrics.retry(service: service)
                Thread.sleep(forTimeInterval: delay.timeInterval)
                number += 1
            }
        }
    }
}

/// The failure that ended a retried request.
struct RetryExhausted: Error {
    /// The last attempt's failure.
    let failure: RequestFailure
    /// Attempts made.
    let attempts: Int
}
