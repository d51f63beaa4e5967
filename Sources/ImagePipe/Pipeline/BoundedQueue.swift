// Runs at most N work items at once, in FIFO order, each on a thread of its own: the pipeline's compression and transfer queues.
public import Dispatch
import Synchronization

/// Runs work items on ``limit`` lanes, serial Dispatch queues, at most one item per lane at a time.
///
/// Items beyond the limit wait in a FIFO list instead of occupying (and blocking) threads. Each
/// lane is a serial queue because those get a thread of their own whenever they have work: items
/// on a concurrent queue share the few threads Dispatch gives CPU work (one per core), so a put or
/// a file move queued behind busy compressions would wait for one of them to end.
public final class BoundedQueue: Sendable {
    /// The most items running at once.
    public let limit: Int
    private let lanes: [DispatchQueue]
    private let state: Mutex<State>

    private struct State: ~Copyable {
        var free: [Int]
        // Slots are cleared as items start, so a finished item's captures (encoded images) are freed at once.
        var pending: [(@Sendable () -> Void)?] = []
        var head = 0

        init(free: [Int]) { self.free = free }
    }

    /// Creates a queue named `label` running at most `limit` items at once.
    public init(label: String, limit: Int, qos: DispatchQoS = .default) {
        self.limit = max(1, limit)
        self.lanes = (0..<self.limit).map { DispatchQueue(label: "\(label).\($0)", qos: qos) }
        self.state = Mutex(State(free: Array((0..<self.limit).reversed())))
    }

    /// Runs `work` now if a lane is free, or later in the order submitted.
    public func async(_ work: @escaping @Sendable () -> Void) {
        let lane = state.withLock { state -> Int? in
            if let lane = state.free.popLast() { return lane }
            state.pending.append(work)
            return nil
        }
        if let lane { start(work, on: lane) }
    }

    /// Items running or waiting.
    public var count: Int {
        state.withLock { limit - $0.free.count + $0.pending.count - $0.head }
    }

    private func start(_ work: @escaping @Sendable () -> Void, on lane: Int) {
        lanes[lane].async {
            work()
            self.next(on: lane)
        }
    }

    private func next(on lane: Int) {
        let following = state.withLock { state -> (@Sendable () -> Void)? in
            guard state.head < state.pending.count else {
                state.free.append(lane)
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
        if let following { start(following, on: lane) }
    }
}
