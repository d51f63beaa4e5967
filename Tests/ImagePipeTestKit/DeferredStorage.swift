// A storage repository that takes each put at once and reports it only when told, as the local directory does between rounds of fsyncs.
import Foundation
public import ImagePipe
import Synchronization

/// Takes every put's bytes at once (keeping only its key) and reports the puts when told to:
/// for tests of what happens while outputs wait to be made durable.
public final class DeferredStorage: StorageRepository, Sendable {
    private let pending = Mutex<[(String, @Sendable (Result<StoredObject, ImagePipeError>) -> Void)]>([])

    /// Creates a storage with nothing waiting.
    public init() {}

    /// Puts taken and not yet reported.
    public var waiting: Int { pending.withLock { $0.count } }

    /// Reports every waiting put: stored, or failed with the error `failure` gives for its key.
    public func reportAll(failing failure: (String) -> ImagePipeError? = { _ in nil }) {
        let taken = pending.withLock { pending in
            defer { pending.removeAll() }
            return pending
        }
        for (key, completion) in taken {
            completion(failure(key).map { .failure($0) } ?? .success(StoredObject(key: key, url: "deferred://" + key, bytes: 1)))
        }
    }

    public func put(_ object: StorageObject, completion: @escaping @Sendable (Result<StoredObject, ImagePipeError>) -> Void) {
        let key = object.key
        pending.withLock { $0.append((key, completion)) }
    }

    public func put(_ object: StorageObject) throws(ImagePipeError) -> StoredObject {
        throw ImagePipeError(.storageRejected, "the pipeline stores through put(_:completion:)")
    }
    public func existing(_ key: String) throws(ImagePipeError) -> ExistingObject? { nil }
    public func delete(_ key: String) throws(ImagePipeError) {}
    public func probe() throws(ImagePipeError) {}
    public var keyLimits: KeyLimits { KeyLimits(maxKeyBytes: 1024) }
    public var location: String { "deferred" }
}
