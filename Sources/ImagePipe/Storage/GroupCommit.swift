// When files written by many puts are made durable together: one round at a time, each taking every put that arrived.

/// The scheduling of group commit, with no I/O: puts arrive while a round of fsyncs is running and
/// wait for the next, which takes all of them at once.
///
/// The first put to find no round running starts one; a put that arrives during a round waits for
/// it to end. So under load a round covers every put that finished writing while the last one was
/// syncing, and the journal commits one flush for all of them, while a lone put is never held back
/// waiting for company (no timer). Each event returns what its caller must do.
struct GroupCommit<Entry>: ~Copyable {
    /// What the caller does after an event.
    enum Action {
        /// Nothing: a round is running and will pick the entry up.
        case none
        /// Run a round over these entries, then report ``roundEnded()``.
        case runRound([Entry])
    }

    private var waiting: [Entry] = []
    private var roundRunning = false

    /// Entries waiting for the next round.
    var waitingCount: Int { waiting.count }

    /// Whether a round is running.
    var isRunningRound: Bool { roundRunning }

    /// A put has written its file and waits to be made durable.
    mutating func submitted(_ entry: Entry) -> Action {
        waiting.append(entry)
        guard !roundRunning else { return .none }
        return startRound()
    }

    /// The running round has ended: the next one takes everything that arrived meanwhile.
    mutating func roundEnded() -> Action {
        precondition(roundRunning, "a round ended that never started")
        roundRunning = false
        guard !waiting.isEmpty else { return .none }
        return startRound()
    }

    private mutating func startRound() -> Action {
        roundRunning = true
        defer { waiting.removeAll(keepingCapacity: true) }
        return .runRound(waiting)
    }
}
