// The working memory of images compressed at the same time, kept under a limit so peak memory does not depend on luck.
import Dispatch
import Synchronization

/// A shared allowance of bytes that concurrent compressions draw from, owned by the pipeline's ``Capacity``.
///
/// Most images decode in strips and need little memory, but a progressive JPEG holds all its DCT
/// coefficients (6 bytes per pixel for 4:4:4: 88 MB for 5120x2880) and WebP, HEIC, AVIF, GIF and
/// interlaced PNG decode whole. Without a limit, a worker's peak memory depends on which of those
/// happen to coincide, and a long batch meets the worst case sooner or later. With one, the worst
/// case is bounded: a compression that does not fit waits (in arrival order) until enough is
/// released, and one that is larger than the whole allowance runs alone.
///
/// ``acquire(_:)`` blocks its thread: compressions call it on the pipeline's compression threads,
/// never from Swift's cooperative pool.
public final class WorkingMemory: Sendable {
    /// The allowance in bytes; nil for no limit.
    public let limit: Int?

    private struct Waiter {
        let bytes: Int
        let semaphore: DispatchSemaphore
    }

    private struct State {
        var used = 0
        var waiting: [Waiter] = []
    }

    private let state = Mutex(State())
    /// Where the bytes come from when the allowance is another process's (see ``init(asking:)``).
    private let elsewhere: (@Sendable (Int) -> Int)?

    /// No limit: for compressions run outside a pipeline.
    public static let unlimited = WorkingMemory(limit: nil)

    /// Creates an allowance of `limit` bytes (nil: none).
    public init(limit: Int?) {
        self.limit = limit.map { max(1, $0) }
        self.elsewhere = nil
    }

    /// An allowance held by another process: an image helper compresses within its worker's
    /// pipeline budget by asking the worker (`ask` blocks until the bytes are granted and returns
    /// them). A compression holds one reservation at a time, so each ask replaces the last grant,
    /// and the worker hands the last one back when the job ends: ``release(_:)`` here does nothing.
    public init(asking ask: @escaping @Sendable (Int) -> Int) {
        self.limit = nil
        self.elsewhere = ask
    }

    /// Bytes currently granted.
    public var used: Int { state.withLock { $0.used } }

    /// Compressions waiting for their bytes.
    public var waiting: Int { state.withLock { $0.waiting.count } }

    /// Takes `bytes` (at most the whole allowance), blocking until they fit; returns what was
    /// taken, to hand back to ``release(_:)``.
    public func acquire(_ bytes: Int) -> Int {
        if let elsewhere { return elsewhere(bytes) }
        guard let limit else { return 0 }
        let amount = min(max(0, bytes), limit)
        let semaphore = state.withLock { state -> DispatchSemaphore? in
            if state.waiting.isEmpty && (state.used == 0 || state.used + amount <= limit) {
                state.used += amount
                return nil
            }
            let semaphore = DispatchSemaphore(value: 0)
            state.waiting.append(Waiter(bytes: amount, semaphore: semaphore))
            return semaphore
        }
        semaphore?.wait()
        return amount
    }

    /// As ``acquire(_:)``, but waiting no later than `deadline`: nil when the bytes did not fit by
    /// then (nothing is then held). An image helper's need is waited for this way, so that the
    /// job's wall-clock cap counts its waits for memory.
    public func acquire(_ bytes: Int, before deadline: ContinuousClock.Instant) -> Int? {
        if let elsewhere { return elsewhere(bytes) }
        guard let limit else { return 0 }
        let amount = min(max(0, bytes), limit)
        let semaphore = state.withLock { state -> DispatchSemaphore? in
            if state.waiting.isEmpty && (state.used == 0 || state.used + amount <= limit) {
                state.used += amount
                return nil
            }
            let semaphore = DispatchSemaphore(value: 0)
            state.waiting.append(Waiter(bytes: amount, semaphore: semaphore))
            return semaphore
        }
        guard let semaphore else { return amount }
        let left = deadline - ContinuousClock.now
        let nanoseconds = left <= .zero ? 0 : min(left.components.seconds, 86_400 * 365) * 1_000_000_000 + left.components.attoseconds / 1_000_000_000
        if semaphore.wait(timeout: .now() + .nanoseconds(Int(nanoseconds))) == .success { return amount }
        // Timed out: out of the queue, unless a release granted the bytes meanwhile (then they are held).
        let stillWaiting = state.withLock { state -> Bool in
            guard let index = state.waiting.firstIndex(where: { $0.semaphore === semaphore }) else { return false }
            state.waiting.remove(at: index)
            return true
        }
        if stillWaiting {
            // Those behind it may fit now that it no longer waits in front of them.
            release(0)
            return nil
        }
        semaphore.wait()
        return amount
    }

    /// Hands back what ``acquire(_:)`` returned and wakes the waiters that now fit, in order.
    public func release(_ bytes: Int) {
        guard let limit else { return }
        let granted = state.withLock { state -> [DispatchSemaphore] in
            state.used -= bytes
            var granted: [DispatchSemaphore] = []
            while let first = state.waiting.first, state.used == 0 || state.used + first.bytes <= limit {
                state.used += first.bytes
                granted.append(first.semaphore)
                state.waiting.removeFirst()
            }
            return granted
        }
        for semaphore in granted { semaphore.signal() }
    }
}
