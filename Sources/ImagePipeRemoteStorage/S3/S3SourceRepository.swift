// Sources in S3 buckets: ListObjectsV2 for folders, HEAD for single objects, signed GETs with retries and a size limit.
import Foundation
public import ImagePipe
public import Logging

/// Reads sources from any bucket of an S3 or S3-compatible service, with the same endpoint,
/// region, credentials and retries as ``S3Storage``.
///
/// The credentials need `s3:ListBucket` on each source bucket (listing folders, and telling a
/// missing object from a forbidden one) and `s3:GetObject` on the objects.
public final class S3SourceRepository: SourceRepository {
    let s3: S3Client

    /// Creates the repository; the configuration's destination only sets how its own bucket is
    /// addressed. Nothing is sent before the first call.
    public init(configuration: S3Configuration, logger: Logger = Logger(label: "imagepipe.s3"), quota: RetryQuota = RetryQuota()) {
        s3 = S3Client(configuration: configuration, logger: logger, quota: quota)
    }

    public var scheme: String { "s3" }

    /// Requests sent and connections opened so far.
    public var httpStatistics: CurlHTTPClient.Statistics { s3.http.statistics }

    /// ListObjectsV2, page after page (continuation tokens), keys URL-encoded on the wire so any key
    /// survives the XML.
    public func list(_ folder: ObjectLocation) throws(ImagePipeError) -> [ListedObject] {
        try S3BucketName.validate(folder.bucket)
        return try s3.listAll(folder, permissions: "list it (s3:ListBucket) and read its objects (s3:GetObject)")
    }

    public func info(_ location: ObjectLocation) throws(ImagePipeError) -> ListedObject? {
        try S3BucketName.validate(location.bucket)
        let found: HTTPResponse?
        do {
            found = try s3.head(bucket: location.bucket, key: location.key)
        } catch {
            throw error.failure.sourceError(location.description, attempts: error.attempts, isNotFound: false, maxBytes: .max)
        }
        return found.map { response in
            ListedObject(
                location: location, bytes: response.header("Content-Length").flatMap { Int($0) },
                etag: FetchedObject.unquoted(response.header("ETag")))
        }
    }

    /// A signed GET, retried like a PUT; an answer declaring more than `maxBytes` is abandoned
    /// before its body is read.
    public func read(_ location: ObjectLocation, maxBytes: Int) throws(ImagePipeError) -> FetchedObject {
        try S3BucketName.validate(location.bucket)
        let response: HTTPResponse
        do {
            response = try s3.retrier.run("GET \(location)") { (_) throws(RequestFailure) in
                try s3.send("GET", bucket: location.bucket, key: location.key, maxResponseBytes: maxBytes)
            }
        } catch {
            let notFound = if case .server(404, _, _, _) = error.failure { true } else { false }
            throw error.failure.sourceError(location.description, attempts: error.attempts, isNotFound: notFound, maxBytes: maxBytes)
        }
        return FetchedObject(
            data: response.body, etag: FetchedObject.unquoted(response.header("ETag")),
            focusMetadata: response.header("x-amz-meta-" + FetchedObject.focusMetadataKey))
    }

    /// One ListObjectsV2 page (`encoding-type=url`): its objects as siblings of `folder`, whether the
    /// store has more, and the token that asks for them. Entries without a key that decodes are left out.
    ///
    /// - Throws: `configuration` for an answer that is no listing (no `<ListBucketResult>`: an empty
    ///   body, a proxy's HTML page), which would otherwise read as a folder holding nothing.
    package static func listingPage(
        _ page: String, in folder: ObjectLocation
    ) throws(ImagePipeError) -> (objects: [ListedObject], isTruncated: Bool, continuationToken: String?) {
        guard page.contains("<ListBucketResult") else {
            throw .configuration(
                "cannot list \(folder): the answer is no ListObjectsV2 result (no <ListBucketResult>): "
                    + (page.isEmpty ? "an empty answer" : "'\(page.prefix(200))'"))
        }
        var objects: [ListedObject] = []
        for entry in XMLText.elements("Contents", in: page) {
            guard let key = XMLText.first("Key", in: entry).flatMap(Self.urlDecoded) else { continue }
            objects.append(
                ListedObject(
                    location: folder.sibling(key: key), bytes: XMLText.first("Size", in: entry).flatMap { Int($0) },
                    etag: FetchedObject.unquoted(XMLText.first("ETag", in: entry))))
        }
        return (objects, XMLText.first("IsTruncated", in: page) == "true", XMLText.first("NextContinuationToken", in: page))
    }

    /// A key as ListObjectsV2 sends it with `encoding-type=url` (form encoding: `+` for a space).
    package static func urlDecoded(_ text: String) -> String? {
        PercentEncoding.decode(text.replacingOccurrences(of: "+", with: " "))
    }
}
