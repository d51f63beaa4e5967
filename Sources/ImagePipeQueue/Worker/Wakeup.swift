// A level-triggered wake-up between threads and one waiting task, with a deadline on a WorkerClock.
import Synchronization

/// Wakes the worker loop when something may have changed: a delivery, a notification, a finished job.
///
/// A signal sent while nobody waits is kept (once), so a wake-up between the loop's last look and
/// its wait is never lost.
final class Wakeup: Sendable {
    private struct State {
        var signalled = false
        var waiter: (id: Int, continuation: CheckedContinuation<Void, Never>)?
        var nextID = 0
    }

    private let state = Mutex(State())

    /// Wakes the waiter, or the next one to wait.
    func signal() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.signalled = true
                return nil
            }
            state.waiter = nil
            return waiter.continuation
        }
        waiter?.resume()
    }

    /// Returns after a signal, at `deadline` on `clock`, or when the task is cancelled, whichever comes first.
    func wait(until deadline: ContinuousClock.Instant, on clock: any WorkerClock) async {
        if state.withLock({ state in
            defer { state.signalled = false }; return state.signalled
        }) {
            return
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.next() }
            group.addTask { try? await clock.sleep(until: deadline) }
            await group.next()
            group.cancelAll()
        }
    }

    /// Returns at the next signal, or when cancelled.
    private func next() async {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state -> Bool in
                    if state.signalled || Task.isCancelled {
                        state.signalled = false
                        return true
                    }
                    state.waiter = (id, continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                guard let waiter = state.waiter, waiter.id == id else { return nil }
                state.waiter = nil
                return waiter.continuation
            }
            waiter?.resume()
        }
    }
}
