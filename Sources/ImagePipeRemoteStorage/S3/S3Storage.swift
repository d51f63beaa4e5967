// S3 and S3-compatible object storage: signed PUTs, multipart above a threshold, retries, checksums.
import Foundation
public import ImagePipe
public import Logging

/// Stores objects in an S3 bucket (or MinIO, R2, Ceph, Supabase's S3 endpoint) under a prefix.
///
/// Every PUT carries Content-Type, Cache-Control, Content-MD5 and the signed SHA-256 of its body, so
/// a body damaged on the way is refused by the store; where the store does not check Content-MD5
/// (and does not encrypt, which changes what its ETag means), the ETag it answers a single PUT with
/// is compared with the MD5 sent as well. Objects above the multipart threshold go up in parts, and an upload that
/// fails is aborted so no parts are left behind. Safe to call from many threads: each request
/// borrows a pooled libcurl handle, and nothing else is shared but the retry quota.
public final class S3Storage: StorageRepository, Sendable {
    /// The configuration.
    public var configuration: S3Configuration { s3.configuration }
    let s3: S3Client
    var logger: Logger { s3.logger }

    /// Creates the storage. Nothing is sent until the first put.
    public init(configuration: S3Configuration, logger: Logger = Logger(label: "imagepipe.s3"), quota: RetryQuota = RetryQuota()) {
        s3 = S3Client(configuration: configuration, logger: logger, quota: quota)
    }

    public var location: String { "s3://\(configuration.destination.bucket)/\(configuration.destination.prefix)" }

    /// Requests sent and connections opened so far.
    public var httpStatistics: CurlHTTPClient.Statistics { s3.http.statistics }

    public func put(_ object: StorageObject) throws(ImagePipeError) -> StoredObject {
        try KeyTemplate.validate(key: object.key)
        try keyLimits.check(object.key)
        let key = configuration.destination.fullKey(object.key)
        let written =
            object.body.count > configuration.multipartThreshold
            ? try putMultipart(object, key: key) : try putSingle(object, key: key)
        // The key was free when looked up and is taken now.
        if !written { return try settleTakenKey(object, url: configuration.objectURL(forKey: key)) }
        logger.trace("stored", metadata: ["key": "\(object.key)", "bytes": .stringConvertible(object.body.count)])
        return StoredObject(key: object.key, url: configuration.objectURL(forKey: key), bytes: object.body.count)
    }

    /// One PUT; false when the object was to be new (`If-None-Match: *`) and the key is taken.
    private func putSingle(_ object: StorageObject, key: String) throws(ImagePipeError) -> Bool {
        let md5 = Digests.md5(object.body)
        let payloadHash = Digests.sha256(object.body).hexString
        var headers = objectHeaders(object)
        headers.append(("Content-MD5", Data(md5).base64EncodedString()))
        if object.policy == .create { headers.append(("If-None-Match", "*")) }
        return try run("PUT", key) { (_) throws(RequestFailure) -> Bool in
            do throws(RequestFailure) {
                let response = try send("PUT", key: key, headers: headers, body: object.body, payloadHash: payloadHash)
                try verifyETag(response, md5: md5)
                return true
            } catch .server(412, _, _, _) where object.policy == .create {
                return false
            }
        } onIntegrityFailure: {
            removeCorrupted(key)
        }
    }

    /// Content-Type and Cache-Control, which S3 keeps with the object and serves back, and the
    /// object's origin as user metadata (`x-amz-meta-imagepipe-sha256`, `-source`, `-size`, `-variant`).
    func objectHeaders(_ object: StorageObject) -> [(name: String, value: String)] {
        var headers: [(name: String, value: String)] = [("Content-Type", object.contentType)]
        if let cacheControl = object.cacheControl, !cacheControl.isEmpty {
            headers.append(("Cache-Control", cacheControl))
        }
        for (name, value) in (object.origin?.metadataFields ?? [:]).sorted(by: { $0.key < $1.key }) {
            headers.append((Self.metadataPrefix + name, value))
        }
        return headers
    }

    /// Runs one retried request step, turning its final failure into an ImagePipeError naming the object.
    func run<T>(
        _ what: String, _ key: String, _ attempt: (Int) throws(RequestFailure) -> T,
        onIntegrityFailure: () -> Void = {}
    ) throws(ImagePipeError) -> T {
        do {
            return try s3.retrier.run("\(what) \(key)", attempt)
        } catch {
            if case .integrity = error.failure { onIntegrityFailure() }
            throw error.failure.imagePipeError("\(what) s3://\(configuration.destination.bucket)/\(key)", attempts: error.attempts)
        }
    }

    /// Signs and sends one request for `key` in the destination's bucket; any non-2xx answer becomes
    /// a ``RequestFailure``.
    func send(
        _ method: String, key: String, query: [(name: String, value: String)] = [],
        headers: [(name: String, value: String)] = [], body: Data = Data(),
        payloadHash: String = S3Client.emptyPayloadHash
    ) throws(RequestFailure) -> HTTPResponse {
        try s3.send(
            method, bucket: configuration.destination.bucket, key: key, query: query, headers: headers, body: body,
            payloadHash: payloadHash)
    }

    /// Compares the ETag with the MD5 sent, when the ETag can be an MD5 at all.
    ///
    /// Encrypted objects (SSE-KMS, SSE-C, and some stores' SSE-S3) get ETags that are not MD5s, so any
    /// answer that reports encryption is left to the store's own Content-MD5 check.
    func verifyETag(_ response: HTTPResponse, md5: [UInt8]) throws(RequestFailure) {
        guard configuration.verifyETags,
            response.header("x-amz-server-side-encryption") == nil,
            response.header("x-amz-server-side-encryption-customer-algorithm") == nil,
            let etag = response.header("ETag")
        else { return }
        let value = etag.trimmingCharacters(in: CharacterSet(charactersIn: "\"W/")).lowercased()
        guard value.count == 32, value.allSatisfy(\.isHexDigit) else { return }
        let expected = md5.hexString
        guard value == expected else {
            throw .integrity("the store reports MD5 \(value) for the bytes it received, but \(expected) was sent")
        }
    }

    /// After a body arrived damaged every time, removes what the store kept so no broken object is served.
    func removeCorrupted(_ key: String) {
        do {
            _ = try send("DELETE", key: key)
            logger.warning("removed an object whose upload arrived damaged", metadata: ["key": "s3://\(configuration.destination.bucket)/\(key)"])
        } catch {
            logger.error(
                "an object may hold damaged bytes and could not be removed",
                metadata: ["key": "s3://\(configuration.destination.bucket)/\(key)", "error": "\(error)"])
        }
    }
}
