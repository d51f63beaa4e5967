// The batch's results waiting for their callback: bounded, so a slow callback holds up new jobs instead of piling up results.
import Synchronization

/// Counts results handed to the batch's delivery queue and not yet delivered; the run starts no
/// job while `limit` wait. A callback that blocks (a notifier whose receiver is down, a manifest on
/// a slow disk) then slows the batch down instead of letting results pile up in memory.
final class DeliveryBacklog: Sendable {
    /// Results that may wait at once.
    let limit: Int
    private let state = Mutex<(waiting: Int, parked: CheckedContinuation<Void, Never>?)>((0, nil))

    init(limit: Int) { self.limit = max(1, limit) }

    /// A result was handed over.
    func added() { state.withLock { $0.waiting += 1 } }

    /// A result's callback returned; the run, parked for room, goes on.
    func delivered() {
        let parked = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.waiting -= 1
            guard state.waiting < limit else { return nil }
            defer { state.parked = nil }
            return state.parked
        }
        parked?.resume()
    }

    /// Returns once fewer than `limit` results wait. One caller at a time (the run's loop).
    func waitForRoom() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                if state.waiting < limit { return true }
                state.parked = continuation
                return false
            }
            if now { continuation.resume() }
        }
    }
}
