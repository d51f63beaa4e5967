// Looking up, removing and probing S3 objects: HEAD for the origin an object was made from, DELETE, HEAD bucket.
import Foundation
import ImagePipe

extension S3Storage {
    /// The prefix of user metadata headers; S3 returns them as it got them, lowercased.
    static let metadataPrefix = "x-amz-meta-"

    /// S3 keys are at most 1024 bytes, the destination's prefix included.
    public var keyLimits: KeyLimits {
        KeyLimits(maxKeyBytes: 1024 - configuration.destination.prefix.utf8.count)
    }

    /// HEAD on the object: its size and the origin in its user metadata.
    ///
    /// S3 answers 404 for a missing key only to callers allowed to list the bucket (`s3:ListBucket`);
    /// others get 403 for a missing key and an existing one alike, which fails here with the reason.
    public func existing(_ key: String) throws(ImagePipeError) -> ExistingObject? {
        let fullKey = configuration.destination.fullKey(key)
        let response = try run("HEAD", fullKey) { (_) throws(RequestFailure) -> HTTPResponse? in
            do throws(RequestFailure) {
                return try send("HEAD", key: fullKey)
            } catch {
                if case .server(let status, _, _, _) = error, status == 404 { return nil }
                throw error
            }
        }
        guard let response else { return nil }
        var fields: [String: String] = [:]
        for (name, value) in response.headers where name.lowercased().hasPrefix(Self.metadataPrefix) {
            fields[String(name.dropFirst(Self.metadataPrefix.count))] = value
        }
        return ExistingObject(origin: Origin(metadataFields: fields), bytes: response.header("Content-Length").flatMap { Int($0) } ?? 0,
                              url: configuration.objectURL(forKey: fullKey))
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
        let bucket = "s3://\(configuration.destination.bucket)"
        do {
            _ = try retrier.run("HEAD \(bucket)") { (_) throws(RequestFailure) in
                try sendBucketRequest("HEAD")
            }
        } catch {
            let status: Int? = if case .server(let status, _, _, _) = error.failure { status } else { nil }
            switch status {
            case 404:
                throw .configuration("bucket \(bucket) does not exist at \(configuration.endpoint.origin)")
            case 403:
                throw .configuration("access to bucket \(bucket) is denied (403): check the credentials, and that they may "
                                     + "list the bucket (s3:ListBucket), read, write and delete objects under its prefix")
            case 301, 400:
                throw .configuration("bucket \(bucket) refused the request (\(error.failure)): is --region right? (now \(configuration.region))")
            default:
                throw .configuration("cannot reach bucket \(bucket) at \(configuration.endpoint.origin): \(error.failure)")
            }
        }
    }

    /// A signed request on the bucket itself (no key).
    private func sendBucketRequest(_ method: String) throws(RequestFailure) -> HTTPResponse {
        let (endpoint, path) = configuration.bucketTarget()
        var signable = SigV4Signer.Request(
            method: method, path: path, query: [],
            headers: [("Host", endpoint.authority), ("x-amz-content-sha256", Self.emptyPayloadHash)],
            payloadHash: Self.emptyPayloadHash)
        signer.sign(&signable, at: Date())
        let response: HTTPResponse
        do {
            response = try client.perform(HTTPRequest(method: method, url: endpoint.origin + PercentEncoding.encodePath(path),
                                                      headers: signable.headers, body: Data()))
        } catch {
            throw .transport(error)
        }
        guard response.isSuccess else { throw S3ErrorResponse.failure(response) }
        return response
    }
}
