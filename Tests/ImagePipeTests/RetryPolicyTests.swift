import ImagePipe
import Testing

@Suite struct RetryPolicyTests {
    @Test func backoffIsFullJitterUnderAGrowingCeiling() {
        let policy = RetryPolicy(maxAttempts: 3, baseDelay: .seconds(1), maxDelay: .seconds(20))
        #expect(policy.delay(afterAttempt: 1, random: 0.999) < .seconds(1))
        #expect(policy.delay(afterAttempt: 2, random: 0.5) == .seconds(1))
        #expect(policy.delay(afterAttempt: 3, random: 0.5) == .seconds(2))
        #expect(policy.delay(afterAttempt: 20, random: 0.5) == .seconds(10), "capped at 20 s")
        #expect(policy.delay(afterAttempt: 3, random: 0) == .zero)
        #expect(policy.shouldRetry(afterAttempt: 2) && !policy.shouldRetry(afterAttempt: 3))
    }
}
