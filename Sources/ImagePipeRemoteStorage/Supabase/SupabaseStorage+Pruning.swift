// Listing the destination's keys (the list API, paged, folder by folder) and removing them in batches for `imagepipe prune`.
package import Foundation
public import ImagePipe

extension SupabaseStorage: PrunableStorage {
    /// The most names one batch removal takes (Supabase Storage's own limit).
    public static let deleteBatchLimit = 1000

    /// Every key under the prefix, listed as sources are (``SupabaseSourceRepository/list(_:)``),
    /// `pageSize` entries a request, the prefix taken off.
    public func allKeys(pageSize: Int) throws(ImagePipeError) -> [String] {
        var listing = configuration
        listing.listPageSize = max(1, pageSize)
        let destination = configuration.destination
        let folder = ObjectLocation(scheme: "supabase", bucket: destination.bucket, key: destination.prefix)
        let listed = try SupabaseSourceRepository(configuration: listing, logger: logger).list(folder)
        return listed.map { $0.location.key.afterPrefixBytes(destination.prefix) }
    }

    /// `DELETE /storage/v1/object/BUCKET` with `{"prefixes": [NAME, …]}`, at most `batchSize` (and
    /// never more than 1000) names a request. Supabase answers with the objects it removed and says
    /// nothing of the others: each name missing from the answer is looked up, and one still there
    /// (or whose look-up fails) is reported as not removed.
    public func delete(_ keys: [String], batchSize: Int) throws(ImagePipeError) -> [KeyFailure] {
        try KeyFailure.removingInBatches(keys, of: min(batchSize, Self.deleteBatchLimit), deleteBatch)
    }

    private func deleteBatch(_ keys: [String]) throws(ImagePipeError) -> [KeyFailure] {
        let destination = configuration.destination
        let names = keys.map(destination.fullKey)
        // Encoding strings cannot fail.
        let body = try! JSONSerialization.data(withJSONObject: ["prefixes": names], options: [.sortedKeys])
        let request = HTTPRequest(
            method: "DELETE", url: supabase.url("/storage/v1/object/\(destination.bucket)"),
            headers: supabase.authorizationHeaders + [("Content-Type", "application/json")], body: body)
        let response = try run("delete \(keys.count) objects under", destination.prefix) { (_) throws(RequestFailure) in
            try supabase.send(request)
        }
        guard let gone = Self.removedNames(response.body) else {
            throw ImagePipeError(
                .storageRejected,
                "removing objects under supabase://\(destination.bucket)/\(destination.prefix) answered with no list of removed objects")
        }
        return Self.notRemoved(keys, answered: gone, in: destination) { (key) throws(ImagePipeError) in try existing(key) != nil }
    }

    /// The names a removal answer lists as removed (a JSON array of objects); nil when it is no such list.
    package static func removedNames(_ body: Data) -> Set<String>? {
        guard let removed = (try? JSONSerialization.jsonObject(with: body)) as? [[String: Any]] else { return nil }
        return Set(removed.compactMap { $0["name"] as? String })
    }

    /// The keys of one batch removal that may still be there: those whose names the answer left out
    /// (`answered`) and that `stillThere` finds, or whose look-up failed. A failed look-up is that
    /// key's failure, not the batch's: thrown, it would lose the keys found still there before it.
    package static func notRemoved(
        _ keys: [String], answered gone: Set<String>, in destination: RemoteDestination,
        stillThere: (String) throws(ImagePipeError) -> Bool
    ) -> [KeyFailure] {
        var failures: [KeyFailure] = []
        for key in keys where !gone.contains(destination.fullKey(key)) {
            let url = "supabase://\(destination.bucket)/\(destination.fullKey(key))"
            // Not in the answer: gone before (fine), or refused (still there).
            do {
                if try stillThere(key) { failures.append(KeyFailure(key: key, reason: "\(url) was not removed (may the key delete it?)")) }
            } catch {
                failures.append(KeyFailure(key: key, reason: "\(url) may not have been removed: looking it up failed: \(error.reason)"))
            }
        }
        return failures
    }
}
