// Signed, retried requests to any bucket of one S3 service: the plumbing S3Storage and S3SourceRepository share.
import Foundation
import ImagePipe
import Logging

/// Signs requests with SigV4, sends them over pooled libcurl handles and retries them in the
/// standard mode, for any bucket on one endpoint with one set of credentials.
final class S3Client: Sendable {
    /// Endpoint, region, credentials, retries and timeouts (the destination in it only decides
    /// how its own bucket is addressed).
    let configuration: S3Configuration
    let http: CurlHTTPClient
    let signer: SigV4Signer
    let retrier: Retrier
    let logger: Logger

    /// SHA-256 of an empty body, signed for requests without one.
    static let emptyPayloadHash = Digests.sha256(Data()).hexString

    init(configuration: S3Configuration, logger: Logger, quota: RetryQuota) {
        self.configuration = configuration
        self.logger = logger
        http = CurlHTTPClient(configuration: configuration.http)
        signer = SigV4Signer(credentials: configuration.credentials, region: configuration.region, service: "s3")
        retrier = Retrier(policy: configuration.retry, quota: quota, service: "s3", logger: logger)
    }

    /// Signs and sends one request for `key` in `bucket` (nil: the bucket itself); any non-2xx
    /// answer becomes a ``RequestFailure``.
    func send(
        _ method: String, bucket: String, key: String?, query: [(name: String, value: String)] = [],
        headers: [(name: String, value: String)] = [], body: Data = Data(),
        payloadHash: String = S3Client.emptyPayloadHash, maxResponseBytes: Int? = nil
    ) throws(RequestFailure) -> HTTPResponse {
        let (endpoint, path) = configuration.target(bucket: bucket, key: key)
        var signable = SigV4Signer.Request(
            method: method, path: path, query: query,
            headers: [("Host", endpoint.authority)] + headers + [("x-amz-content-sha256", payloadHash)],
            payloadHash: payloadHash)
        signer.sign(&signable, at: Date())
        var url = endpoint.origin + PercentEncoding.encodePath(path)
        if !query.isEmpty { url += "?" + SigV4Signer.canonicalQuery(query) }

        let started = ContinuousClock.now
        let response: HTTPResponse
        do {
            response = try http.perform(
                HTTPRequest(
                    method: method, url: url, headers: signable.headers, body: body,
                    maxResponseBytes: maxResponseBytes))
        } catch {
            RequestMetrics.request(service: "s3", method: method, status: nil)
            throw .transport(error)
        }
        RequestMetrics.request(service: "s3", method: method, status: response.status)
        logger.trace(
            "request answered",
            metadata: [
                "method": "\(method)", "url": "\(url)", "status": .stringConvertible(response.status),
                "duration_ms": .stringConvertible(Int((ContinuousClock.now - started).milliseconds.rounded())),
            ])
        guard response.isSuccess else { throw S3ErrorResponse.failure(response) }
        return response
    }

    /// HEAD on an object, retried: its answer, or nil when there is none (404).
    ///
    /// S3 answers 404 for a missing key only to callers allowed to list the bucket (`s3:ListBucket`);
    /// others get 403 for a missing key and an existing one alike, which fails here.
    func head(bucket: String, key: String) throws(RetryExhausted) -> HTTPResponse? {
        try retrier.run("HEAD s3://\(bucket)/\(key)") { (_) throws(RequestFailure) -> HTTPResponse? in
            do throws(RequestFailure) {
                return try send("HEAD", bucket: bucket, key: key)
            } catch {
                if case .server(404, _, _, _) = error { return nil }
                throw error
            }
        }
    }

    /// The configuration error for a bucket that cannot be used, from the last failure of a request on it.
    ///
    /// - Parameter permissions: what the credentials must be allowed, for the message on a 403.
    func bucketError(_ bucket: String, _ failure: RequestFailure, permissions: String) -> ImagePipeError {
        let name = "s3://\(bucket)"
        let status: Int? = if case .server(let status, _, _, _) = failure { status } else { nil }
        switch status {
        case 404:
            return .configuration("bucket \(name) does not exist at \(configuration.endpoint.origin)")
        case 403:
            return .configuration("access to bucket \(name) is denied (403): check the credentials, and that they may \(permissions)")
        case 301, 400:
            return .configuration("bucket \(name) refused the request (\(failure)): is --region right? (now \(configuration.region))")
        default:
            return .configuration("cannot reach bucket \(name) at \(configuration.endpoint.origin): \(failure)")
        }
    }
}
