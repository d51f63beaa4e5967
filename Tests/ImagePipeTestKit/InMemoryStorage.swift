// A storage repository in memory, with scripted failures, for tests of code built on imagepipe.
import Foundation
public import ImagePipe
import Synchronization

/// Keeps stored objects in a dictionary and can fail chosen puts.
///
/// Like the local directory storage, a put follows the object's ``WritePolicy``: it refuses with
/// `keyCollision` to replace an object made from another original, and keeps the same original's
/// identical output when it was asked to create a new one.
public final class InMemoryStorage: StorageRepository, Sendable {
    /// Decides the outcome of each put: nil stores the object, an error fails the put.
    public typealias FailureRule = @Sendable (_ object: StorageObject, _ attempt: Int) -> ImagePipeError?

    private struct State {
        var objects: [String: StorageObject] = [:]
        var attempts: [String: Int] = [:]
        var putCount = 0
        var deleted: [String] = []
        var lookups = 0
        var concurrent = 0
        var maxConcurrent = 0
    }

    private let state = Mutex(State())
    private let failure: FailureRule?
    private let delay: Duration
    private let retainsBodies: Bool
    private let probeFailure: ImagePipeError?
    /// The key limits it reports (S3's by default).
    public let keyLimits: KeyLimits

    /// Creates an empty storage; `failing` scripts failures, `delay` makes every put take that long.
    /// With `retainingBodies` false, stored objects keep their metadata but drop their bytes, as a
    /// real store frees the caller's memory once an object is written.
    /// `probeFailure` makes ``probe()`` fail with it.
    public init(
        failing: FailureRule? = nil, delay: Duration = .zero, retainingBodies: Bool = true,
        keyLimits: KeyLimits = KeyLimits(maxKeyBytes: 1024), probeFailure: ImagePipeError? = nil
    ) {
        self.failure = failing
        self.delay = delay
        self.retainsBodies = retainingBodies
        self.keyLimits = keyLimits
        self.probeFailure = probeFailure
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
        // As every real store refuses them (the storage contract checks it), so a test that stores
        // here sees the failure a real destination would give.
        try KeyTemplate.validate(key: object.key)
        if delay > .zero { Thread.sleep(forTimeInterval: Double(delay.milliseconds) / 1000) }
        if let error = failure?(object, attempt) { throw error }
        var kept = object
        if !retainsBodies { kept.body = Data() }
        let inPlace = try state.withLock { state throws(ImagePipeError) -> Bool in
            if let holder = state.objects[kept.key], try kept.keepsObject(heldBy: holder.origin) { return true }
            state.objects[kept.key] = kept
            return false
        }
        return StoredObject(key: object.key, url: "memory:///\(object.key)", bytes: object.body.count, wasInPlace: inPlace)
    }

    public func existing(_ key: String) throws(ImagePipeError) -> ExistingObject? {
        state.withLock { state in
            state.lookups += 1
            // Served as it was stored, as by S3 and Supabase: the Cache-Control comes back with the origin.
            return state.objects[key].map {
                ExistingObject(origin: $0.origin, bytes: $0.body.count, url: "memory:///\(key)", cacheControl: $0.cacheControl)
            }
        }
    }

    public func delete(_ key: String) throws(ImagePipeError) {
        try KeyTemplate.validate(key: key)
        state.withLock { state in
            state.objects[key] = nil
            state.deleted.append(key)
        }
    }

    public func probe() throws(ImagePipeError) {
        if let probeFailure { throw probeFailure }
    }

    /// Puts an object as if an earlier run (or another tool, with no origin) had stored it.
    public func preload(_ object: StorageObject) {
        state.withLock { $0.objects[object.key] = object }
    }

    /// Keys removed, in order.
    public var deletedKeys: [String] { state.withLock { $0.deleted } }
    /// Number of ``existing(_:)`` calls.
    public var lookupCount: Int { state.withLock { $0.lookups } }

    /// The stored objects by key (with empty bodies when the storage does not retain them).
    public var objects: [String: StorageObject] { state.withLock { $0.objects } }
    /// Number of put calls, failed ones included.
    public var putCount: Int { state.withLock { $0.putCount } }
    /// The most puts that ran at the same time.
    public var maxConcurrentPuts: Int { state.withLock { $0.maxConcurrent } }
}
