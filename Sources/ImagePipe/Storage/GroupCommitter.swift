// Runs the local directory's rounds of fsyncs one after another on a queue of their own.
import Foundation
import Synchronization

/// Makes the local directory's written files durable in rounds (``GroupCommit``): each round
/// starts every file's writeback, fsyncs each, moves each into place and fsyncs the directories
/// once, then reports the round's puts on another thread, so a slow completion (a queue's record,
/// a database round trip) never holds up the next round.
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

    private struct State: ~Copyable {
        var commit = GroupCommit<Pending>()
        /// Directories in which puts are making new directories, with how many: every round fsyncs
        /// them until each such put's own round has.
        var parents: [String: Int] = [:]
    }

    private let state = Mutex(State())
    private let rounds = DispatchQueue(label: "imagepipe.local-commit", qos: .userInitiated)
    private let completions = DispatchQueue(label: "imagepipe.local-commit.completions", qos: .userInitiated)
    private let slots = DispatchSemaphore(value: GroupCommitter.openFileLimit)

    /// Takes a slot for one file before it is opened, waiting while ``openFileLimit`` are pending.
    func reserve() { slots.wait() }

    /// Gives back a slot whose file was never submitted.
    func cancelReservation() { slots.signal() }

    /// Notes that a put is about to make directories in `parents`: every round fsyncs them until
    /// that put's own round has, so a file reported stored in a new directory (that put's or
    /// another's that found the directory made) never has the directory's name still unsynced.
    func willMakeDirectories(in parents: [String]) {
        guard !parents.isEmpty else { return }
        state.withLock { state in
            for parent in parents { state.parents[parent, default: 0] += 1 }
        }
    }

    /// Takes back ``willMakeDirectories(in:)`` once the names are synced or the put failed.
    func madeDirectories(in parents: [String]) {
        guard !parents.isEmpty else { return }
        state.withLock { state in
            for parent in parents {
                state.parents[parent, default: 1] -= 1
                if state.parents[parent] == 0 { state.parents[parent] = nil }
            }
        }
    }

    /// Hands over a file written under a reserved slot.
    func submit(_ file: LocalDirectoryStorage.WrittenFile, _ completion: @escaping @Sendable (Result<StoredObject, ImagePipeError>) -> Void) {
        let action = state.withLock { $0.commit.submitted(Pending(file: file, completion: completion)) }
        perform(action)
    }

    private func perform(_ action: GroupCommit<Pending>.Action) {
        guard case .runRound(let round) = action else { return }
        rounds.async { [self] in
            let parents = state.withLock { Set($0.parents.keys) }
            let outcomes = LocalDirectoryStorage.commit(round.map(\.file), parents: parents)
            for pending in round { madeDirectories(in: pending.file.parentsMade) }
            for _ in round { slots.signal() }
            completions.async {
                for (pending, outcome) in zip(round, outcomes) { pending.completion(outcome) }
            }
            perform(state.withLock { $0.commit.roundEnded() })
        }
    }
}
