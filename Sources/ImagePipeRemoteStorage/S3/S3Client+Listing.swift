// ListObjectsV2 page after page, shared by the sources' listing and the destination's (prune).
import Foundation
import ImagePipe

extension S3Client {
    /// Every object under `folder`'s key, with ListObjectsV2 page after page (continuation tokens),
    /// keys URL-encoded on the wire so any key survives the XML.
    ///
    /// - Parameters:
    ///   - pageSize: `max-keys` for each page; nil leaves it to the store (1000 on S3).
    ///   - permissions: what the credentials must be allowed, for the message on a 403.
    func listAll(_ folder: ObjectLocation, pageSize: Int? = nil, permissions: String) throws(ImagePipeError) -> [ListedObject] {
        var objects: [ListedObject] = []
        var token: String?
        // A store that hands out a token it gave before would have the listing go round for ever.
        var tokens = Set<String>()
        repeat {
            var query: [(name: String, value: String)] = [("list-type", "2"), ("prefix", folder.key), ("encoding-type", "url")]
            if let pageSize { query.append(("max-keys", String(pageSize))) }
            if let token { query.append(("continuation-token", token)) }
            let page: String
            do {
                page = try retrier.run("ListObjectsV2 \(folder)") { (_) throws(RequestFailure) in
                    try send("GET", bucket: folder.bucket, key: nil, query: query).text
                }
            } catch {
                throw bucketError(folder.bucket, error.failure, permissions: permissions)
            }
            let listed = try S3SourceRepository.listingPage(page, in: folder)
            objects += listed.objects
            try ListingBound.check(objects.count, limit: configuration.maxListedEntries, listing: folder.description)
            guard listed.isTruncated else { break }
            token = listed.continuationToken
            guard let next = token, !next.isEmpty else {
                throw .configuration("listing \(folder) stopped: the store said there is more but gave no continuation token")
            }
            guard tokens.insert(next).inserted else {
                throw .configuration("listing \(folder) stopped: the store gave the continuation token '\(next.prefix(200))' a second time")
            }
        } while true
        return objects
    }
}
