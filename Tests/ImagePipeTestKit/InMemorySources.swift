// A source repository in memory, with scripted failures, for tests of code that reads sources from object storage.
public import Foundation
public import ImagePipe
import Synchronization

/// Holds objects by bucket and key under one scheme, lists and reads them like an object store.
///
/// Each object's ETag is the first 32 hex digits of its SHA-256. Reads can be scripted to fail,
/// and every read is counted, so a test can tell what was downloaded.
public final class InMemorySources: SourceRepository, Sendable {
    /// Decides the outcome of each read: nil reads the object, an error fails the read.
    public typealias FailureRule = @Sendable (_ location: ObjectLocation, _ attempt: Int) -> ImagePipeError?

    private struct State {
        var objects: [ObjectLocation: Data] = [:]
        var reads: [ObjectLocation] = []
        var attempts: [ObjectLocation: Int] = [:]
    }

    private let state = Mutex(State())
    private let failure: FailureRule?
    private let buckets: Set<String>
    /// The scheme it serves.
    public let scheme: String

    /// Creates an empty store of `buckets` under `scheme`; listing another bucket fails like a
    /// missing bucket does (`configuration`).
    public init(scheme: String = "s3", buckets: Set<String> = ["media"], failing: FailureRule? = nil) {
        self.scheme = scheme
        self.buckets = buckets
        self.failure = failing
    }

    /// Stores `data` at `key` in `bucket`; returns its URL.
    @discardableResult
    public func put(_ data: Data, bucket: String = "media", key: String) -> String {
        let location = ObjectLocation(scheme: scheme, bucket: bucket, key: key)
        state.withLock { $0.objects[location] = data }
        return location.description
    }

    /// The ETag this store gives `data`.
    public static func etag(_ data: Data) -> String { String(SHA256Digest.hash(data).hex.prefix(32)) }

    public func list(_ folder: ObjectLocation) throws(ImagePipeError) -> [ListedObject] {
        guard buckets.contains(folder.bucket) else { throw .configuration("bucket \(scheme)://\(folder.bucket) does not exist") }
        return state.withLock { state in
            // Prefixes match as bytes, as a store matches them.
            state.objects.filter { $0.key.bucket == folder.bucket && $0.key.key.utf8.starts(with: folder.key.utf8) }
                .map { ListedObject(location: $0.key, bytes: $0.value.count, etag: Self.etag($0.value)) }
        }
    }

    public func info(_ location: ObjectLocation) throws(ImagePipeError) -> ListedObject? {
        state.withLock { state in
            state.objects[location].map { ListedObject(location: location, bytes: $0.count, etag: Self.etag($0)) }
        }
    }

    public func read(_ location: ObjectLocation, maxBytes: Int) throws(ImagePipeError) -> FetchedObject {
        let (attempt, data) = state.withLock { state in
            state.attempts[location, default: 0] += 1
            return (state.attempts[location]!, state.objects[location])
        }
        if let error = failure?(location, attempt) { throw error }
        guard let data else { throw ImagePipeError(.sourceNotFound, "\(location) does not exist") }
        guard data.count <= maxBytes else { throw .sourceTooLarge(location.description, bytes: data.count, limit: maxBytes) }
        state.withLock { $0.reads.append(location) }
        return FetchedObject(data: data, etag: Self.etag(data))
    }

    /// The objects downloaded, in order (refused reads not included).
    public var reads: [ObjectLocation] { state.withLock { $0.reads } }
}
