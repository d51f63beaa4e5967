// Looking up, removing and probing S3 objects: HEAD for the origin an object was made from, DELETE, HEAD bucket.
import Foundation
public import ImagePipe

extension S3Storage {
    /// The prefix of user metadata headers; S3 returns them as it got them, lowercased.
    static let metadataPrefix = "x-amz-meta-"

    /// S3 keys are at most 1024 bytes, the destination's prefix included.
    public var keyLimits: KeyLimits {
        KeyLimits(maxKeyBytes: 1024 - configuration.destination.prefix.utf8.count)
    }

    /// HEAD on the object: its size, the origin in its user metadata and the Cache-Control it is
    /// served with (see ``S3Client/head(bucket:key:)`` for what a caller without `s3:ListBucket` gets).
    public func existing(_ key: String) throws(ImagePipeError) -> ExistingObject? {
        let fullKey = configuration.destination.fullKey(key)
        let found: HTTPResponse?
        do {
            found = try s3.head(bucket: configuration.destination.bucket, key: fullKey)
        } catch {
            throw error.failure.imagePipeError("HEAD s3://\(configuration.destination.bucket)/\(fullKey)", attempts: error.attempts)
        }
        guard let response = found else { return nil }
        var fields: [String: String] = [:]
        for (name, value) in response.headers where name.lowercased().hasPrefix(Self.metadataPrefix) {
            fields[String(name.dropFirst(Self.metadataPrefix.count))] = value
        }
        return ExistingObject(
            origin: Origin(metadataFields: fields), bytes: response.header("Content-Length").flatMap { Int($0) } ?? 0,
            url: configuration.objectURL(forKey: fullKey), cacheControl: response.header("Cache-Control"))
    }

    public func delete(_ key: String) throws(ImagePipeError) {
        try KeyTemplate.validate(key: key)
        let fullKey = configuration.destination.fullKey(key)
        try run("DELETE", fullKey) { (_) throws(RequestFailure) in
            _ = try send("DELETE", key: fullKey)
        }
    }

    /// HEAD on the bucket: a missing bucket, refused credentials or an unreachable endpoint stop the
    /// command before any image is decoded. Needs `s3:ListBucket`, which the up-to-date check needs too.
    public func probe() throws(ImagePipeError) {
        let bucket = configuration.destination.bucket
        do {
            _ = try s3.retrier.run("HEAD s3://\(bucket)") { (_) throws(RequestFailure) in
                try s3.send("HEAD", bucket: bucket, key: nil)
            }
        } catch {
            throw s3.bucketError(
                bucket, error.failure,
                permissions: "list the bucket (s3:ListBucket), read, write and delete objects under its prefix")
        }
    }
}
