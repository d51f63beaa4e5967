// Group commit: requests that arrive while a round runs go together in the next round, for the local store's fsyncs and PostgreSQL's settlements alike.
import Synchronization

/// The scheduling of group commit, with no I/O: requests arrive while a round runs and wait for
/// the next, which takes all of them at once (up to a batch size).
///
/// The first request to find no round running starts one; a request that arrives during a round
/// waits for it to end. So under load a round covers every request that arrived while the last one
/// ran (one journal flush, one statement and one commit for many jobs), while a lone request is
/// never held back waiting for company (no timer). Each event returns what its caller must do.
public struct GroupCommit<Entry>: ~Copyable {
    /// What the caller does after an event.
    public enum Action {
        /// Nothing: a round is running and will pick the entry up.
        case none
        /// Run a round over these entries, then report ``roundEnded()``.
        case runRound([Entry])
    }

    private var waiting: [Entry] = []
    private var roundRunning = false
    /// The most entries one round takes.
    public let maxBatch: Int

    /// A schedule whose rounds take at most `maxBatch` entries each.
    public init(maxBatch: Int = .max) {
        self.maxBatch = max(1, maxBatch)
    }

    /// Entries waiting for the next round.
    public var waitingCount: Int { waiting.count }

    /// Whether a round is running.
    public var isRunningRound: Bool { roundRunning }

    /// An entry waits to be committed.
    public mutating func submitted(_ entry: Entry) -> Action {
        waiting.append(entry)
        guard !roundRunning else { return .none }
        return startRound()
    }

    /// The running round has ended: the next one takes what arrived meanwhile.
    public mutating func roundEnded() -> Action {
        precondition(roundRunning, "a round ended that never started")
        roundRunning = false
        guard !waiting.isEmpty else { return .none }
        return startRound()
    }

    private mutating func startRound() -> Action {
        roundRunning = true
        let count = min(maxBatch, waiting.count)
        defer { waiting.removeFirst(count) }
        return .runRound(Array(waiting.prefix(count)))
    }
}

/// Runs a ``GroupCommit``'s rounds one after another.
///
/// `round` runs each round wherever suits its work (a Dispatch queue for fsyncs, a task for a
/// database statement) and calls its `done` with one outcome per entry, in order. Each request's
/// completion is then called on that same thread, and must not block.
public final class GroupCommitter<Item: Sendable, Outcome: Sendable>: Sendable {
    /// Runs one round and reports its outcomes.
    public typealias Round = @Sendable (_ items: [Item], _ done: @escaping @Sendable ([Outcome]) -> Void) -> Void

    private typealias Entry = (item: Item, completion: @Sendable (Outcome) -> Void)
    private let schedule: Mutex<GroupCommit<Entry>>
    private let round: Round
    private let rounds = Atomic<Int>(0)

    /// A committer whose rounds take at most `maxBatch` requests.
    public init(maxBatch: Int = .max, round: @escaping Round) {
        self.schedule = Mutex(GroupCommit(maxBatch: maxBatch))
        self.round = round
    }

    /// Rounds run so far.
    public var roundsRun: Int { rounds.load(ordering: .relaxed) }

    /// Adds `item` to the next round; `completion` gets its outcome.
    public func submit(_ item: Item, completion: @escaping @Sendable (Outcome) -> Void) {
        perform(schedule.withLock { $0.submitted((item, completion)) })
    }

    /// Adds `item` to the next round and returns its outcome.
    public func submit(_ item: Item) async -> Outcome {
        await withCheckedContinuation { continuation in
            submit(item) { continuation.resume(returning: $0) }
        }
    }

    private func perform(_ action: GroupCommit<Entry>.Action) {
        guard case .runRound(let entries) = action else { return }
        round(entries.map(\.item)) { [self] outcomes in
            rounds.add(1, ordering: .relaxed)
            for (entry, outcome) in zip(entries, outcomes) { entry.completion(outcome) }
            perform(schedule.withLock { $0.roundEnded() })
        }
    }
}
