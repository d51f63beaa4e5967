// Events from any thread to the worker loop's one task, taken in batches; waiting for them is not ended by cancellation.
import Synchronization

/// A multi-producer, single-consumer queue of events.
///
/// Pipeline threads, timers and I/O tasks send; the loop takes everything sent so far at once.
/// Unlike `AsyncStream`, a wait is not ended by the task's cancellation: a cancelled loop still
/// has jobs to give back, and learns of its cancellation as an event of its own.
final class EventChannel<Event: Sendable>: Sendable {
    private struct State {
        var events: [Event] = []
        var waiter: CheckedContinuation<[Event], Never>?
    }

    private let state = Mutex(State())

    /// Adds an event; wakes the loop if it waits.
    func send(_ event: Event) {
        let waiter = state.withLock { state -> (CheckedContinuation<[Event], Never>, [Event])? in
            state.events.append(event)
            guard let waiter = state.waiter else { return nil }
            state.waiter = nil
            defer { state.events.removeAll(keepingCapacity: true) }
            return (waiter, state.events)
        }
        if let (continuation, events) = waiter { continuation.resume(returning: events) }
    }

    /// Every event sent since the last call, waiting for one if there is none.
    func next() async -> [Event] {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> [Event]? in
                guard !state.events.isEmpty else {
                    state.waiter = continuation
                    return nil
                }
                defer { state.events.removeAll(keepingCapacity: true) }
                return state.events
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}
