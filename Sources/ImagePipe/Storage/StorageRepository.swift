// The seam between the FileHandler and wherever variants are kept: put bytes under a key.
import Foundation

/// A place that stores objects under keys: a local directory, an S3 bucket, Supabase Storage.
///
/// `put` is called concurrently from the upload queue and blocks until the object is stored
/// durably (or has failed); it must be safe to call from several threads at once. Putting the same
/// key twice replaces the object, so a job that runs again after a crash writes the same outputs.
public protocol StorageRepository: Sendable {
    /// Stores one object.
    ///
    /// - Throws: ``ImagePipeError`` with `storageUnavailable` when retrying may help, `storageRejected`
    ///   when it will not, or `invalidKey` when the key is unusable.
    func put(_ object: StorageObject) throws(ImagePipeError) -> StoredObject

    /// Where objects go, for logs and the summary (no secrets).
    var location: String { get }
}

/// An object to store.
public struct StorageObject: Sendable {
    /// The key relative to the destination root, e.g. `2024/trip/beach-large.jpg`.
    public var key: String
    /// The bytes.
    public var body: Data
    /// The media type, e.g. `image/webp`.
    public var contentType: String
    /// The HTTP Cache-Control value for stores that serve objects over HTTP.
    public var cacheControl: String?

    /// Creates an object.
    public init(key: String, body: Data, contentType: String, cacheControl: String? = nil) {
        self.key = key
        self.body = body
        self.contentType = contentType
        self.cacheControl = cacheControl
    }
}

/// Where an object ended up.
public struct StoredObject: Sendable, Hashable, Codable {
    /// The key relative to the destination root.
    public var key: String
    /// A URL to the object: `file://` for local storage, the bucket or CDN URL for remote stores.
    public var url: String
    /// The stored size in bytes.
    public var bytes: Int

    /// Creates a record of a stored object.
    public init(key: String, url: String, bytes: Int) {
        self.key = key
        self.url = url
        self.bytes = bytes
    }
}
