// The one owner of a pipeline's capacity: jobs that hold image data, jobs held in all, and the working memory compressions share.
public import Foundation
import Synchronization

/// Everything that bounds a pipeline, decided and counted in one place.
///
/// - **Room**: jobs admitted that hold image data (being inspected, decoded, encoded, or storing
///   outputs whose bytes the store has not yet taken). However large a batch or a queue, only this
///   many images are in memory, besides the small ones (sources of 64 KiB at most) that wait for a
///   batch of the sandboxed helpers with their room given back (``JobPipeline``, a batch per lane
///   at most).
/// - **Hold limit**: jobs admitted in all, counting those whose outputs were handed to the store
///   and only wait to be made durable (a local directory's round of fsyncs). They hold no image
///   data, so the pipeline goes on with the next jobs meanwhile; the limit bounds the files a store
///   keeps open for its fsyncs (``Limits/filesWaitingForDurability``).
/// - **Working memory**: the bytes concurrent compressions may hold at their peak (``WorkingMemory``).
///
/// A job is admitted only while room and hold limit both allow (``tryReserve(upTo:)``, ``reserve()``).
/// It gives its room back when its outputs are handed off (``handOff()``), or when it ends
/// (``end(handedOff:)``), which also gives back its place in the hold limit. A queue worker never
/// claims more than its pipeline admits, and learns of room given back through ``addRoomListener(_:)``.
public final class Capacity: Sendable {
    /// The bounds, computed from the command's options in one place.
    public struct Limits: Sendable, Hashable {
        /// Images compressed at once (`--jobs`): one per core by default.
        public var compressions: Int
        /// Objects stored and sources inspected at once (`--uploads`).
        public var transfers: Int
        /// Jobs holding image data at once.
        public var room: Int
        /// Jobs admitted at once in all, handed-off ones included.
        public var holdLimit: Int
        /// Bytes concurrent compressions may hold at their peak; nil for no limit.
        public var workingMemory: Int?

        /// Files a store may keep open waiting for its round of fsyncs, at most: each keeps its
        /// descriptor until then, and a process has a thousand or so by default.
        public static let filesWaitingForDurability = 256

        /// Limits for `jobs` compressions and `uploads` transfers at once: room for twice the
        /// compressions plus the transfers (one image decoding, one waiting, each transfer busy),
        /// and a hold limit of the room plus as many handed-off jobs as the files they write
        /// (`outputsPerJob` each) allow within ``filesWaitingForDurability``, or `handedOff`.
        ///
        /// Handed-off jobs hold no image data (nor their sources: those are let go once
        /// compressed), so the bound is the store's open files, not memory. It is what makes a
        /// local directory's rounds of fsyncs large: on ext4 a round's first fsync commits the
        /// journal for the files after it, and rounds held to three times the room (16 jobs by
        /// default) made a batch of small images 12% slower than rounds of up to 85
        /// (docs/performance.md, "Rounds of fsyncs").
        public init(
            jobs: Int = ProcessInfo.processInfo.activeProcessorCount, uploads: Int = 4, room: Int? = nil,
            outputsPerJob: Int = 3, handedOff: Int? = nil, workingMemory: Int? = nil
        ) {
            compressions = max(1, jobs)
            transfers = max(1, uploads)
            self.room = max(compressions, room ?? (2 * compressions + transfers))
            holdLimit = self.room + max(0, handedOff ?? Self.filesWaitingForDurability / max(1, outputsPerJob))
            self.workingMemory = workingMemory
        }

        /// How many more jobs may be admitted while `working` hold image data and `held` are
        /// admitted in all: the one rule of room and hold limit, which a queue worker's own count
        /// of its claims follows too.
        public func admits(working: Int, held: Int) -> Int {
            max(0, min(room - working, holdLimit - held))
        }
    }

    private struct State {
        /// Jobs admitted that hold image data.
        var working = 0
        /// Jobs admitted and not ended.
        var held = 0
        /// Callers of ``reserve()`` waiting for room, first come first served.
        var waiters: [(id: Int, continuation: CheckedContinuation<Void, any Error>)] = []
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
        var listeners: [Int: @Sendable () -> Void] = [:]
        var nextID = 0
    }

    /// The bounds.
    public let limits: Limits
    /// The working memory compressions draw from.
    public let memory: WorkingMemory
    private let state = Mutex(State())

    /// Creates the capacity for `limits`.
    public init(_ limits: Limits) {
        self.limits = limits
        self.memory = WorkingMemory(limit: limits.workingMemory)
    }

    /// Jobs admitted and not ended: more than the room while some only wait to be made durable.
    public var held: Int { state.withLock { $0.held } }

    /// Jobs admitted that hold image data.
    public var working: Int { state.withLock { $0.working } }

    /// How many jobs could be admitted now.
    public var available: Int { state.withLock { available(in: $0) } }

    /// Admits up to `count` jobs at once, without waiting; returns how many were admitted.
    public func tryReserve(upTo count: Int) -> Int {
        state.withLock { state in
            guard state.waiters.isEmpty else { return 0 }
            let admitted = min(max(0, count), available(in: state))
            state.working += admitted
            state.held += admitted
            return admitted
        }
    }

    /// Admits one job, waiting (in arrival order) until there is room.
    ///
    /// - Throws: `CancellationError` when the calling task is cancelled first; nothing is admitted then.
    public func reserve() async throws {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                // Cancellation is checked under the lock: a handler that ran before this found no waiter.
                let outcome = state.withLock { state -> Result<Bool, CancellationError> in
                    if Task.isCancelled { return .failure(CancellationError()) }
                    if state.waiters.isEmpty && available(in: state) > 0 {
                        state.working += 1
                        state.held += 1
                        return .success(true)
                    }
                    state.waiters.append((id, continuation))
                    return .success(false)
                }
                switch outcome {
                case .success(true): continuation.resume()
                case .success(false): break
                case .failure(let error): continuation.resume(throwing: error)
                }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, any Error>? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index).continuation
            }
            waiter?.resume(throwing: CancellationError())
        }
    }

    /// Gives back `count` admissions that will not be used.
    public func cancelReservation(_ count: Int = 1) {
        guard count > 0 else { return }
        returned { state in
            state.working -= count
            state.held -= count
        }
    }

    /// A job's outputs were handed to the store and only wait to be made durable: its room comes back.
    public func handOff() {
        returned { $0.working -= 1 }
    }

    /// A job ended: its place in the hold limit comes back, and its room if it still held it.
    /// - Returns: whether no job is admitted any more (the pipeline went idle).
    @discardableResult
    public func end(handedOff: Bool) -> Bool {
        returned { state in
            state.held -= 1
            if !handedOff { state.working -= 1 }
        }
    }

    /// Calls `listener` (on whichever thread gives room back, outside any lock) each time room
    /// comes back; keep it short. Returns a token for ``removeRoomListener(_:)``.
    public func addRoomListener(_ listener: @escaping @Sendable () -> Void) -> Int {
        state.withLock { state in
            state.nextID += 1
            state.listeners[state.nextID] = listener
            return state.nextID
        }
    }

    /// Stops calling a listener.
    public func removeRoomListener(_ token: Int) {
        state.withLock { _ = $0.listeners.removeValue(forKey: token) }
    }

    /// Suspends until no job is admitted.
    public func idle() async {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                if state.held == 0 { return true }
                state.idleWaiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    private func available(in state: State) -> Int {
        limits.admits(working: state.working, held: state.held)
    }

    /// Applies a change that gives something back, admits waiters that now fit, and tells the listeners.
    @discardableResult
    private func returned(_ change: (inout State) -> Void) -> Bool {
        let (admitted, idle, listeners, isIdle) = state.withLock { state in
            change(&state)
            var admitted: [CheckedContinuation<Void, any Error>] = []
            while !state.waiters.isEmpty && available(in: state) > 0 {
                state.working += 1
                state.held += 1
                admitted.append(state.waiters.removeFirst().continuation)
            }
            var idle: [CheckedContinuation<Void, Never>] = []
            if state.held == 0 { swap(&idle, &state.idleWaiters) }
            return (admitted, idle, Array(state.listeners.values), state.held == 0)
        }
        for waiter in admitted { waiter.resume() }
        for waiter in idle { waiter.resume() }
        for listener in listeners { listener() }
        return isIdle
    }
}
