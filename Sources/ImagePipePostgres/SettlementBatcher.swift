// Group commit: settlements that arrive while one statement runs go together in the next one.
import Synchronization

/// Coalesces concurrent requests into batches run one at a time.
///
/// While a batch's statement runs, the requests arriving meanwhile queue up and go together in the
/// next: one statement and one commit for many jobs under load, no added wait when idle.
final class SettlementBatcher<Item: Sendable, Outcome: Sendable>: Sendable {
    typealias Run = @Sendable ([Item]) async -> [Outcome]

    private struct State {
        var waiting: [(item: Item, continuation: CheckedContinuation<Outcome, Never>)] = []
        var running = false
    }

    private let state = Mutex(State())
    private let maxBatch: Int
    private let run: Run

    /// `run` gets each batch and returns one outcome per item, in order.
    init(maxBatch: Int = 500, run: @escaping Run) {
        self.maxBatch = maxBatch
        self.run = run
    }

    /// Adds `item` to the next batch and returns its outcome.
    func submit(_ item: Item) async -> Outcome {
        await withCheckedContinuation { continuation in
            let lead = state.withLock { state -> Bool in
                state.waiting.append((item, continuation))
                defer { state.running = true }
                return !state.running
            }
            if lead { Task { await self.drain() } }
        }
    }

    private func drain() async {
        while true {
            let batch = state.withLock { state -> [(item: Item, continuation: CheckedContinuation<Outcome, Never>)] in
                let batch = Array(state.waiting.prefix(maxBatch))
                state.waiting.removeFirst(batch.count)
                if batch.isEmpty { state.running = false }
                return batch
            }
            guard !batch.isEmpty else { return }
            let outcomes = await run(batch.map(\.item))
            for (entry, outcome) in zip(batch, outcomes) { entry.continuation.resume(returning: outcome) }
        }
    }
}
