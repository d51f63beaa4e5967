// The seam between the FileHandler and wherever variants are kept: put, look up and remove objects by key.
public import Foundation

/// A place that stores objects under keys: a local directory, an S3 bucket, Supabase Storage.
///
/// Every object imagepipe writes carries its ``Origin``: the SHA-256 and name of the original it
/// was made from. That is what lets a job tell its own earlier output (a re-run, a re-delivery:
/// idempotent) from another original's (a key collision: never silently replaced), and lets a
/// re-run skip finished work without decoding anything.
///
/// All methods are called concurrently from the pipeline's queues and must be safe to call from
/// several threads at once; all but ``put(_:completion:)`` block until done.
public protocol StorageRepository: Sendable {
    /// Stores one object as its ``StorageObject/policy`` allows.
    ///
    /// The FileHandler looks every key up with ``existing(_:)`` before it decodes; the policy says
    /// what it found, and a store enforces it as far as it can at write time (the local directory
    /// atomically, with a hard link; S3 and Supabase with a conditional write for new keys), so a
    /// writer that got there in between is never silently replaced.
    ///
    /// - Throws: ``ImagePipeError`` with `storageUnavailable` when retrying may help, `storageFull`
    ///   when the destination has no space left, `storageRejected` when retrying will not help,
    ///   `invalidKey` when the key is unusable, `keyCollision` as above.
    func put(_ object: StorageObject) throws(ImagePipeError) -> StoredObject

    /// Stores one object as ``put(_:)`` does and calls `completion` with the outcome, at once or
    /// later on another thread. The pipeline stores through this one: a store that makes many puts
    /// durable together (the local directory) lets the calling thread go while the disk catches up.
    /// The default runs ``put(_:)``.
    func put(_ object: StorageObject, completion: @escaping @Sendable (Result<StoredObject, ImagePipeError>) -> Void)

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

extension StorageObject {
    /// The rule for a put that finds `holder`'s object under its key, as ``policy`` says: true keeps
    /// the object there (the same original's identical output, when the key was to be new), false
    /// replaces it; another original's object is a `keyCollision`. Objects without an origin, and
    /// ``WritePolicy/replaceAny``, replace whatever is there.
    public func keepsObject(heldBy holder: Origin?) throws(ImagePipeError) -> Bool {
        guard let origin, policy != .replaceAny else { return false }
        guard origin.isSameOriginal(as: holder) else {
            throw .keyCollision(key: key, source: origin.source, existing: holder)
        }
        return policy == .create && holder?.variant == origin.variant
    }
}

extension StorageRepository {
    public func put(_ object: StorageObject, completion: @escaping @Sendable (Result<StoredObject, ImagePipeError>) -> Void) {
        completion(Result { () throws(ImagePipeError) in try put(object) })
    }

    /// What a conditional create does when it finds its key taken since the look-up (see
    /// ``StorageObject/keepsObject(heldBy:)``): the kept object is reported in place, a replaced one
    /// is written again without the condition.
    public func settleTakenKey(_ object: StorageObject, url: String) throws(ImagePipeError) -> StoredObject {
        guard try object.keepsObject(heldBy: try existing(object.key)?.origin) else {
            var again = object
            again.policy = .replaceSameOriginal
            return try put(again)
        }
        return StoredObject(key: object.key, url: url, bytes: object.body.count, wasInPlace: true)
    }
}

/// An object found under a key.
public struct ExistingObject: Sendable, Hashable {
    /// Its origin; nil for an object imagepipe did not write (or wrote before origins were recorded).
    public var origin: Origin?
    /// Its size in bytes.
    public var bytes: Int
    /// Its URL, as ``StoredObject/url`` would give it.
    public var url: String
    /// The Cache-Control it is served with, read on the same look-up as its origin; nil where the
    /// store keeps none (a local directory: the web server in front decides).
    public var cacheControl: String?

    /// Creates a record of an existing object.
    public init(origin: Origin?, bytes: Int, url: String, cacheControl: String? = nil) {
        self.origin = origin
        self.bytes = bytes
        self.url = url
        self.cacheControl = cacheControl
    }

    /// Whether it was served as `immutable`: caches may keep it unasked for its whole lifetime, so
    /// new bytes under its key would not reach everyone who saw it (``CacheControl/isImmutable(_:)``).
    public var wasServedImmutable: Bool { CacheControl.isImmutable(cacheControl) }
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
        // Names are cut at `/` bytes, as the file system cuts them (a `/` and a combining mark are one character).
        if let maxSegmentBytes, let long = key.utf8.split(separator: UInt8(ascii: "/")).first(where: { $0.count > maxSegmentBytes }) {
            throw ImagePipeError(
                .invalidKey,
                "output key '\(key)' has a name of \(long.count) bytes ('\(String(decoding: long, as: UTF8.self).prefix(40))…'); the destination's file system takes at most \(maxSegmentBytes)"
            )
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
    /// What it may replace.
    public var policy: WritePolicy

    /// Creates an object.
    public init(
        key: String, body: Data, contentType: String, cacheControl: String? = nil, origin: Origin? = nil,
        policy: WritePolicy = .replaceSameOriginal
    ) {
        self.key = key
        self.body = body
        self.contentType = contentType
        self.cacheControl = cacheControl
        self.origin = origin
        self.policy = policy
    }
}

/// What a put may find under its key and replace.
public enum WritePolicy: Sendable, Hashable {
    /// The key was free when looked up: if an object of the same original appeared since, it is
    /// kept as it is (the put reports it in place); another original's is a `keyCollision`.
    case create
    /// The key held this original's output (a re-run redoing it): replace it, but not another
    /// original's object that appeared since.
    case replaceSameOriginal
    /// Replace whatever is there (`--overwrite`, `--update`).
    case replaceAny
}

/// Where an object ended up.
public struct StoredObject: Sendable, Hashable, Codable {
    /// The key relative to the destination root.
    public var key: String
    /// A URL to the object: `file://` for local storage, the bucket or CDN URL for remote stores.
    public var url: String
    /// The stored size in bytes.
    public var bytes: Int
    /// Whether the put found this original's object already there (written by a concurrent job of
    /// the same original) and kept it instead of writing; not part of the record.
    public var wasInPlace = false

    /// Creates a record of a stored object.
    public init(key: String, url: String, bytes: Int, wasInPlace: Bool = false) {
        self.key = key
        self.url = url
        self.bytes = bytes
        self.wasInPlace = wasInPlace
    }

    enum CodingKeys: String, CodingKey {
        case key, url, bytes
    }
}

extension ImagePipeError {
    /// The collision of `source`'s output with what `existing` holds under its key, naming both
    /// originals. `location` is where `source` was read: an original of the same name read from
    /// elsewhere is told apart. `cacheControl` is what the object there is served with: an earlier
    /// version of `source` served as immutable is refused for that reason, and the message says what to do.
    public static func keyCollision(
        key: String, source: String, existing: Origin?, location: String? = nil, cacheControl: String? = nil
    ) -> ImagePipeError {
        guard let existing else {
            return ImagePipeError(
                .keyCollision,
                "output key '\(key)' already holds a file with no recorded original (written by "
                    + "another tool, or by an imagepipe older than 0.2); '\(source)' would replace it. Pass --overwrite to replace it")
        }
        if existing.source == source, let location, let before = existing.location, before != location {
            return ImagePipeError(
                .keyCollision,
                "output key '\(key)' already holds an image made from another '\(source)', read from \(before) (sha256 "
                    + "\(existing.sha256.prefix(16))…); the one read from \(location) would replace it. To keep both, give each "
                    + "folder its own --dest prefix or key by content with {hash}; or pass --update to replace it")
        }
        if existing.source == source, CacheControl.isImmutable(cacheControl) {
            return ImagePipeError(
                .keyCollision,
                "'\(source)' changed since output key '\(key)' was made from it (then sha256 \(existing.sha256.prefix(16))…), "
                    + "and that URL was served as immutable (Cache-Control: \(cacheControl ?? "")): browsers and CDNs may keep "
                    + "showing the old picture \(CacheControl.lifetimeText(cacheControl)). To publish the new picture under a new URL, "
                    + "key outputs by content (--key '{dir}/{stem}-{hash}-{variant}.{ext}'); or pass --update to replace it anyway, "
                    + "knowing that caches may keep the old one")
        }
        if existing.source == source {
            return ImagePipeError(
                .keyCollision,
                "'\(source)' changed since output key '\(key)' was made from it (then sha256 "
                    + "\(existing.sha256.prefix(16))…). Pass --update to replace outputs of changed originals, or --overwrite to replace any")
        }
        return ImagePipeError(
            .keyCollision,
            "output key '\(key)' already holds an image made from '\(existing.source)' (sha256 "
                + "\(existing.sha256.prefix(16))…); '\(source)' would replace it. "
                + "Add {hash} to --key to give each original its own keys, or pass --overwrite to replace it")
    }
}
