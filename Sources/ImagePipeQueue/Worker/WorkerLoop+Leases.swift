// Lease renewal: every held job's claim renewed on a heartbeat, and jobs taken by other workers marked lost.
import Foundation
import ImagePipe
import Synchronization

extension WorkerLoop {
    /// Renews the claims of held jobs every `interval` until cancelled (after the last job is settled).
    ///
    /// Runs on a thread of its own (see ``DedicatedThread``). A job whose claim turns out to be taken
    /// is marked lost: when its result comes it is dropped, as the queue would refuse it anyway.
    func renewLeases(every interval: Duration) async {
        while !Task.isCancelled {
            do { try await clock.sleep(for: interval) } catch { return }
            let jobs = state.withLock { state in
                state.held.values.filter { !$0.lost }.map(\.claimed)
            }
            guard !jobs.isEmpty else { continue }
            let lost = await queue.heartbeat(jobs)
            guard !lost.isEmpty else { continue }
            // A job being settled was recorded between the snapshot and the heartbeat: not lost.
            let marked = state.withLock { state in
                lost.compactMap { id -> ClaimedJob? in
                    guard let held = state.held[id], held.phase == .inFlight else { return nil }
                    state.held[id]?.lost = true
                    return held.claimed
                }
            }
            for claimed in marked { logLeaseLost(claimed) }
        }
    }
}
