// A concurrent Dispatch queue that runs at most N work items at once, in FIFO order, without blocking threads.
public import Dispatch
import Synchronization

/// Runs work items on a concurrent Dispatch queue, at most ``limit`` at a time.
///
/// Items beyond the limit wait in a FIFO list instead of occupying (and blocking) Dispatch threads,
/// so the compression stage keeps exactly as many threads busy as there are cores it was given.
public final class BoundedQueue: Sendable {
    /// The most items running at once.
    public let limit: Int
    private let queue: DispatchQueue
    private let state = Mutex(State())

    private struct State: ~Copyable {
        var running = 0
        // Slots are cleared as items start, so a finished item's captures (encoded images) are freed at once.
        var pending: [(@Sendable () -> Void)?] = []
        var head = 0
    }

    /// Creates a queue named `label` running at most `limit` items at once.
    public init(label: String, limit: Int, qos: DispatchQoS = .default) {
        self.limit = max(1, limit)
        self.queue = DispatchQueue(label: label, qos: qos, attributes: .concurrent)
    }

    /// Runs `work` now if there is room, or later in the order submitted.
    public func async(_ work: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state -> Bool in
            if state.running < limit {
                state.running += 1
                return true
            }
            state.pending.append(work)
            return false
        }
        if runNow { start(work) }
    }

    /// Items running or waiting.
    public var count: Int {
        state.withLock { $0.running + $0.pending.count - $0.head }
    }

    private func start(_ work: @escaping @Sendable () -> Void) {
        queue.async {
            work()
            self.next()
        }
    }

    private func next() {
        let following = state.withLock { state -> (@Sendable () -> Void)? in
            guard state.head < state.pending.count else {
                state.running -= 1
                state.pending.removeAll(keepingCapacity: true)
                state.head = 0
                return nil
            }
            let work = state.pending[state.head]
            state.pending[state.head] = nil
            state.head += 1
            if state.head > 64 && state.head * 2 > state.pending.count {
                state.pending.removeFirst(state.head)
                state.head = 0
            }
            return work
        }
        if let following { start(following) }
    }
}
