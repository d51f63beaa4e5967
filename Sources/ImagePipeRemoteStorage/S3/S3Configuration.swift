// Everything S3Storage needs: bucket, prefix, region, endpoint and addressing, credentials, limits.
import Foundation
public import ImagePipe

/// The settings of an S3 or S3-compatible destination.
public struct S3Configuration: Sendable {
    /// How the bucket appears in request URLs.
    public enum Addressing: Sendable, Equatable {
        /// `https://endpoint/BUCKET/KEY`: custom endpoints (MinIO, R2, Ceph, Supabase, moto).
        case path
        /// `https://BUCKET.s3.REGION.amazonaws.com/KEY`: AWS itself.
        case virtualHosted
    }

    /// Where objects go.
    public var destination: RemoteDestination
    /// The signing region.
    public var region: String
    /// The service endpoint (for AWS, `https://s3.REGION.amazonaws.com`).
    public var endpoint: ServiceEndpoint
    /// Path-style or virtual-hosted requests (for the destination's bucket; see ``addressing(of:)``).
    public var addressing: Addressing
    /// Whether the endpoint is AWS's own, chosen from the region rather than given.
    private let isAWS: Bool
    /// The signing credentials.
    public var credentials: AWSCredentials
    /// The base of the URLs recorded for stored objects; nil for the store's own object URLs.
    public var publicBaseURL: String?
    /// Objects larger than this go up in parts.
    public var multipartThreshold: Int
    /// The size of each part (S3's minimum is 5 MiB, except for the last part).
    public var partSize: Int
    /// Compare the ETag S3 answers with the MD5 sent, for stores that do not check Content-MD5 themselves.
    public var verifyETags: Bool
    /// Retries.
    public var retry: RetryPolicy
    /// Timeouts.
    public var http: CurlHTTPClient.Configuration
    /// The most objects one listing holds (``ListingBound``).
    public var maxListedEntries = ListingBound.defaultMaxEntries

    /// Creates a configuration. A nil `endpoint` means AWS S3 in `region`, virtual-hosted; any other
    /// endpoint is addressed path-style.
    public init(
        destination: RemoteDestination, region: String, endpoint: ServiceEndpoint? = nil,
        credentials: AWSCredentials, publicBaseURL: String? = nil,
        multipartThreshold: Int = 8 << 20, partSize: Int = 8 << 20, verifyETags: Bool = true,
        retry: RetryPolicy = .standard, http: CurlHTTPClient.Configuration = .init()
    ) {
        self.destination = destination
        self.region = region
        isAWS = endpoint == nil
        if let endpoint {
            self.endpoint = endpoint
            addressing = .path
        } else {
            let domain = region.hasPrefix("cn-") ? "amazonaws.com.cn" : "amazonaws.com"
            self.endpoint = ServiceEndpoint(scheme: "https", host: "s3.\(region).\(domain)")
            // A dotted bucket name breaks the wildcard certificate of virtual-hosted URLs.
            addressing = destination.bucket.contains(".") ? .path : .virtualHosted
        }
        self.credentials = credentials
        self.publicBaseURL = publicBaseURL
        self.multipartThreshold = multipartThreshold
        self.partSize = max(partSize, 5 << 20)
        self.verifyETags = verifyETags
        self.retry = retry
        self.http = http
    }

    /// The configuration for `--dest s3://BUCKET/PREFIX`, from the flags and the AWS environment.
    ///
    /// - Throws: ``ImagePipeError`` `configuration` for a bad destination or URL, or missing credentials.
    public static func resolve(
        destination: String, endpoint: String?, region: String?, publicBaseURL: String?,
        environment: [String: String]
    ) throws(ImagePipeError) -> S3Configuration {
        let target = try RemoteDestination(parsing: destination, scheme: "s3")
        try S3BucketName.validate(target.bucket)
        let shared = try AWSSharedConfig.resolve(environment: environment)
        guard let credentials = shared.credentials else {
            throw .configuration(
                "no AWS credentials for \(destination): set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "
                    + "or a profile in ~/.aws/credentials (AWS_PROFILE)")
        }
        let endpointText = endpoint ?? shared.endpoint
        let parsedEndpoint = try endpointText.map { (text) throws(ImagePipeError) in
            try ServiceEndpoint(parsing: text, what: endpoint != nil ? "--endpoint" : "the S3 endpoint URL")
        }
        let region = region ?? shared.region ?? "us-east-1"
        guard !region.isEmpty, region.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }) else {
            throw .configuration("invalid region '\(region)'")
        }
        if let publicBaseURL { try RemoteDestination.validatePublicBaseURL(publicBaseURL) }
        var retry = RetryPolicy.standard
        if let attempts = shared.maxAttempts { retry.maxAttempts = max(1, attempts) }
        return S3Configuration(
            destination: target, region: region, endpoint: parsedEndpoint, credentials: credentials,
            publicBaseURL: publicBaseURL, retry: retry)
    }

    /// How requests address `bucket`: as set for the destination's; for another bucket (a source's)
    /// virtual-hosted on AWS unless its name has dots, path-style on any other endpoint.
    public func addressing(of bucket: String) -> Addressing {
        if bucket == destination.bucket { return addressing }
        return isAWS && !bucket.contains(".") ? .virtualHosted : .path
    }

    /// The host and decoded path a request for `key` (a full key, prefix included) goes to.
    func target(forKey key: String) -> (endpoint: ServiceEndpoint, path: String) {
        target(bucket: destination.bucket, key: key)
    }

    /// The host and decoded path of a request for `key` in `bucket`, or for the bucket itself when
    /// `key` is nil.
    func target(bucket: String, key: String?) -> (endpoint: ServiceEndpoint, path: String) {
        switch addressing(of: bucket) {
        case .path:
            return (endpoint, endpoint.basePath + "/" + bucket + (key.map { "/" + $0 } ?? ""))
        case .virtualHosted:
            return (endpoint.withHost(bucket + "." + endpoint.host), endpoint.basePath + "/" + (key ?? ""))
        }
    }

    /// The URL recorded for a stored object: the public base URL's, else the store's own.
    public func objectURL(forKey key: String) -> String {
        if let publicBaseURL { return RemoteDestination.publicURL(base: publicBaseURL, key: key) }
        let (endpoint, path) = target(forKey: key)
        return endpoint.origin + PercentEncoding.encodePath(path)
    }
}
