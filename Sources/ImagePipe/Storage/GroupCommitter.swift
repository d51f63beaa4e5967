// Runs the local directory's rounds of fsyncs one after another on a queue of their own.
import Foundation
import Synchronization

/// Makes the local directory's written files durable in rounds (``GroupCommit``): each round
/// starts every file's writeback, fsyncs each, moves each into place and fsyncs the directories
/// once, then reports the round's puts on another thread.
///
/// At most ``openFileLimit`` files wait at once: each keeps its descriptor open until its fsync,
/// and a put beyond that waits in ``reserve()``.
final class GroupCommitter: Sendable {
    /// A written file and whom to tell once it is in place.
    struct Pending: Sendable {
        var file: LocalDirectoryStorage.WrittenFile
        var completion: @Sendable (Result<StoredObject, ImagePipeError>) -> Void
    }

    /// Files written and not yet committed, at most.
    static let openFileLimit = 256

    /// The storage's root: rounds sync the directories up to it.
    let root: String
    private let state = Mutex(GroupCommit<Pending>())
    private let rounds = DispatchQueue(label: "imagepipe.local-commit", qos: .userInitiated)
    private let slots = DispatchSemaphore(value: GroupCommitter.openFileLimit)
    private let roundCount = Atomic<Int>(0)

    /// Rounds run so far.
    var roundsRun: Int { roundCount.load(ordering: .relaxed) }

    /// Creates a committer for the storage under `root`.
    init(root: String) {
        self.root = root
    }

    /// Takes a slot for one file before it is opened, waiting while ``openFileLimit`` are pending.
    func reserve() { slots.wait() }

    /// Gives back a slot whose file was never submitted.
    func cancelReservation() { slots.signal() }

    /// Hands over a file written under a reserved slot.
    func submit(_ file: LocalDirectoryStorage.WrittenFile, _ completion: @escaping @Sendable (Result<StoredObject, ImagePipeError>) -> Void) {
        let action = state.withLock { $0.submitted(Pending(file: file, completion: completion)) }
        perform(action)
    }

    private func perform(_ action: GroupCommit<Pending>.Action) {
        guard case .runRound(let round) = action else { return }
        rounds.async { [self] in
            let outcomes = LocalDirectoryStorage.commit(round.map(\.file), root: root)
            roundCount.add(1, ordering: .relaxed)
            for _ in round { slots.signal() }
            // Off the rounds' queue: a completion that waits (a database round trip, even a put on
            // this storage) never holds up a round.
            DispatchQueue.global(qos: .userInitiated).async {
                for (pending, outcome) in zip(round, outcomes) { pending.completion(outcome) }
            }
            perform(state.withLock { $0.roundEnded() })
        }
    }
}
