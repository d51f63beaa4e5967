// The seam between the FileHandler and wherever variants are kept: put, look up and remove objects by key.
import Foundation

/// A place that stores objects under keys: a local directory, an S3 bucket, Supabase Storage.
///
/// Every object imagepipe writes carries its ``Origin``: the SHA-256 and name of the original it
/// was made from. That is what lets a job tell its own earlier output (a re-run, a re-delivery:
/// idempotent) from another original's (a key collision: never silently replaced), and lets a
/// re-run skip finished work without decoding anything.
///
/// All methods are called concurrently from the pipeline's queues and block until done; they must
/// be safe to call from several threads at once.
public protocol StorageRepository: Sendable {
    /// Stores one object.
    ///
    /// Unless ``StorageObject/replacesOtherOriginals`` is set, a store that can check atomically
    /// (the local directory) refuses with `keyCollision` to replace an object made from another
    /// original; the FileHandler checks every store with ``existing(_:)`` before it decodes.
    ///
    /// - Throws: ``ImagePipeError`` with `storageUnavailable` when retrying may help, `storageFull`
    ///   when the destination has no space left, `storageRejected` when retrying will not help,
    ///   `invalidKey` when the key is unusable, `keyCollision` as above.
    func put(_ object: StorageObject) throws(ImagePipeError) -> StoredObject

    /// What is stored under `key` now, or nil when nothing is (a cheap stat or HEAD, no download).
    func existing(_ key: String) throws(ImagePipeError) -> ExistingObject?

    /// Removes the object under `key`; removing a missing object succeeds.
    func delete(_ key: String) throws(ImagePipeError)

    /// One cheap check at start-up that the destination exists and takes writes, so a wrong
    /// destination stops the command before any image is decoded.
    ///
    /// - Throws: ``ImagePipeError`` `configuration` naming the destination and the reason.
    func probe() throws(ImagePipeError)

    /// The longest keys the destination takes.
    var keyLimits: KeyLimits { get }

    /// Where objects go, for logs and the summary (no secrets).
    var location: String { get }
}

/// Which original an object was made from, stored with the object (an extended attribute on local
/// files, user metadata on S3 and Supabase).
public struct Origin: Sendable, Hashable, Codable {
    /// Hex SHA-256 of the original's bytes.
    public var sha256: String
    /// The original's name as the job knew it (its relative path), for messages naming both sides
    /// of a collision.
    public var source: String
    /// The object's pixel size, so a skipped re-run can still report it without decoding.
    public var width: Int?
    /// See ``width``.
    public var height: Int?

    /// Creates an origin.
    public init(sha256: String, source: String, width: Int? = nil, height: Int? = nil) {
        self.sha256 = sha256
        self.source = source
        self.width = width
        self.height = height
    }

    /// Whether `other` was made from the same original bytes (names may differ: a re-delivery
    /// under another name of the same file is the same original).
    public func isSameOriginal(as other: Origin?) -> Bool { other?.sha256 == sha256 }
}

/// An object found under a key.
public struct ExistingObject: Sendable, Hashable {
    /// Its origin; nil for an object imagepipe did not write (or wrote before origins were recorded).
    public var origin: Origin?
    /// Its size in bytes.
    public var bytes: Int
    /// Its URL, as ``StoredObject/url`` would give it.
    public var url: String

    /// Creates a record of an existing object.
    public init(origin: Origin?, bytes: Int, url: String) {
        self.origin = origin
        self.bytes = bytes
        self.url = url
    }
}

/// The longest keys a destination takes, checked when keys are made so a job fails with
/// `invalid_key` before its image is decoded, not after.
public struct KeyLimits: Sendable, Hashable {
    /// Bytes of the whole key, prefix included (S3: 1024).
    public var maxKeyBytes: Int
    /// Bytes of one `/`-separated segment (local file systems: 255).
    public var maxSegmentBytes: Int?

    /// Creates limits.
    public init(maxKeyBytes: Int, maxSegmentBytes: Int? = nil) {
        self.maxKeyBytes = maxKeyBytes
        self.maxSegmentBytes = maxSegmentBytes
    }

    /// The limits of a local directory: 255 bytes per file name, 4095 for the whole path under `root`.
    public static func localDirectory(root: String) -> KeyLimits {
        KeyLimits(maxKeyBytes: max(1, 4095 - root.utf8.count - 1), maxSegmentBytes: 255)
    }

    /// Throws `invalidKey` when `key` is longer than these limits allow.
    public func check(_ key: String) throws(ImagePipeError) {
        if key.utf8.count > maxKeyBytes {
            throw ImagePipeError(.invalidKey, "output key '\(key)' is \(key.utf8.count) bytes long; the destination takes at most \(maxKeyBytes)")
        }
        if let maxSegmentBytes, let long = key.split(separator: "/").first(where: { $0.utf8.count > maxSegmentBytes }) {
            throw ImagePipeError(.invalidKey, "output key '\(key)' has a name of \(long.utf8.count) bytes ('\(long.prefix(40))…'); the destination's file system takes at most \(maxSegmentBytes)")
        }
    }
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
    /// The original it was made from, recorded with the object.
    public var origin: Origin?
    /// Whether it may replace an object made from another original (`--overwrite`).
    public var replacesOtherOriginals: Bool

    /// Creates an object.
    public init(key: String, body: Data, contentType: String, cacheControl: String? = nil, origin: Origin? = nil,
                replacesOtherOriginals: Bool = false) {
        self.key = key
        self.body = body
        self.contentType = contentType
        self.cacheControl = cacheControl
        self.origin = origin
        self.replacesOtherOriginals = replacesOtherOriginals
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

extension ImagePipeError {
    /// The collision of `object` with what `existing` holds under its key, naming both originals.
    public static func keyCollision(key: String, source: String, existing: Origin?) -> ImagePipeError {
        let holder = existing.map { "made from '\($0.source)' (sha256 \($0.sha256.prefix(16))…)" }
            ?? "not written by imagepipe (no recorded original)"
        return ImagePipeError(.keyCollision, "output key '\(key)' already holds an image \(holder); '\(source)' would replace it. "
            + "Add {hash} to --key to give each original its own keys, or pass --overwrite to replace it")
    }
}

extension Origin {
    /// The origin as plain ASCII name–value pairs, for stores whose object metadata travels in HTTP
    /// headers: `imagepipe-sha256`, `imagepipe-source` (percent-encoded UTF-8) and `imagepipe-size`
    /// (`WxH`).
    public var metadataFields: [String: String] {
        var fields = ["imagepipe-sha256": sha256, "imagepipe-source": Self.percentEncoded(source)]
        if let width, let height { fields["imagepipe-size"] = "\(width)x\(height)" }
        return fields
    }

    /// Reads ``metadataFields`` back (names are matched without regard to case); nil when the
    /// object carries no origin.
    public init?(metadataFields fields: [String: String]) {
        let lowered = Dictionary(fields.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { first, _ in first })
        guard let sha256 = lowered["imagepipe-sha256"], sha256.count == 64 else { return nil }
        let source = lowered["imagepipe-source"].flatMap { $0.removingPercentEncoding } ?? ""
        let size = lowered["imagepipe-size"]?.split(separator: "x").compactMap { Int($0) }
        self.init(sha256: sha256, source: source,
                  width: size?.count == 2 ? size?[0] : nil, height: size?.count == 2 ? size?[1] : nil)
    }

    private static func percentEncoded(_ text: String) -> String {
        let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~/")
        return text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? text
    }
}
