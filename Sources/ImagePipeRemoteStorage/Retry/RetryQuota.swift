// The retry token bucket of the SDKs' standard mode, shared by every request of one storage.
import Synchronization

/// Retries spend tokens and successes earn them back, so a store that is down for everyone is not
/// hammered with retries from every upload thread: once the bucket is empty, failures fail at once.
public final class RetryQuota: Sendable {
    /// Tokens when full (the SDKs use 500).
    public let capacity: Int
    /// Tokens a retry costs.
    public static let retryCost = 5
    /// Tokens a retry after a timeout costs.
    public static let timeoutCost = 10
    /// Tokens a success without retries earns back.
    public static let successRefund = 1

    private let tokens: Mutex<Int>

    /// Creates a full bucket.
    public init(capacity: Int = 500) {
        self.capacity = capacity
        tokens = Mutex(capacity)
    }

    /// Takes the tokens for one retry; nil when the bucket cannot pay for it.
    func acquire(timeout: Bool) -> Int? {
        let cost = timeout ? Self.timeoutCost : Self.retryCost
        return tokens.withLock { available in
            guard available >= cost else { return nil }
            available -= cost
            return cost
        }
    }

    /// Returns tokens after a success: what its retries took, or the small refund when it needed none.
    func release(_ amount: Int) {
        tokens.withLock { $0 = min(capacity, $0 + amount) }
    }

    /// Tokens left.
    public var available: Int { tokens.withLock { $0 } }
}
