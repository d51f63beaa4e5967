// A storage repository in memory, with scripted failures, for tests of code built on imagepipe.
import Foundation
import ImagePipe
import Synchronization

/// Keeps stored objects in a dictionary and can fail chosen puts.
public final class InMemoryStorage: StorageRepository, Sendable {
    /// Decides the outcome of each put: nil stores the object, an error fails the put.
    public typealias FailureRule = @Sendable (_ object: StorageObject, _ attempt: Int) -> ImagePipeError?

    private struct State {
        var objects: [String: StorageObject] = [:]
        var attempts: [String: Int] = [:]
        var putCount = 0
        var concurrent = 0
        var maxConcurrent = 0
    }

    private let state = Mutex(State())
    private let failure: FailureRule?
    private let delay: Duration
    private let retainsBodies: Bool

    /// Creates an empty storage; `failing` scripts failures, `delay` makes every put take that long.
    /// With `retainingBodies` false, stored objects keep their metadata but drop their bytes, as a
    /// real store frees the caller's memory once an object is written.
    public init(failing: FailureRule? = nil, delay: Duration = .zero, retainingBodies: Bool = true) {
        self.failure = failing
        self.delay = delay
        self.retainsBodies = retainingBodies
    }

    /// A storage whose every put fails with `error`.
    public static func alwaysFailing(_ error: ImagePipeError) -> InMemoryStorage {
        InMemoryStorage(failing: { _, _ in error })
    }

    public var location: String { "memory://" }

    public func put(_ object: StorageObject) throws(ImagePipeError) -> StoredObject {
        let attempt = state.withLock { state -> Int in
            state.putCount += 1
            state.concurrent += 1
            state.maxConcurrent = max(state.maxConcurrent, state.concurrent)
            state.attempts[object.key, default: 0] += 1
            return state.attempts[object.key]!
        }
        defer { state.withLock { $0.concurrent -= 1 } }
        if delay > .zero { Thread.sleep(forTimeInterval: Double(delay.milliseconds) / 1000) }
        if let error = failure?(object, attempt) { throw error }
        var kept = object
        if !retainsBodies { kept.body = Data() }
        state.withLock { $0.objects[kept.key] = kept }
        return StoredObject(key: object.key, url: "memory:///\(object.key)", bytes: object.body.count)
    }

    /// The stored objects by key (with empty bodies when the storage does not retain them).
    public var objects: [String: StorageObject] { state.withLock { $0.objects } }
    /// Number of put calls, failed ones included.
    public var putCount: Int { state.withLock { $0.putCount } }
    /// The most puts that ran at the same time.
    public var maxConcurrentPuts: Int { state.withLock { $0.maxConcurrent } }
}
