// Sources in Supabase Storage: the list API folder by folder, object info, authenticated GETs with retries and a size limit.
import Foundation
public import ImagePipe
public import Logging

/// Reads sources from any bucket of a Supabase project, with the same project URL, key and
/// retries as ``SupabaseStorage``.
public final class SupabaseSourceRepository: SourceRepository {
    /// The configuration (its destination is not used).
    public let configuration: SupabaseConfiguration
    let supabase: SupabaseClient

    /// Creates the repository. Nothing is sent before the first call.
    public init(
        configuration: SupabaseConfiguration, logger: Logger = Logger(label: "imagepipe.supabase"),
        quota: RetryQuota = RetryQuota()
    ) {
        self.configuration = configuration
        supabase = SupabaseClient(configuration: configuration, logger: logger, quota: quota)
    }

    public var scheme: String { "supabase" }

    /// `POST /storage/v1/object/list/BUCKET` for the folder and every folder under it: Supabase lists
    /// one level at a time, folders as entries without an `id`, in pages of
    /// ``SupabaseConfiguration/listPageSize`` (`limit`, `offset`). The bucket is checked first, so a
    /// missing one is named as such rather than listed as empty.
    ///
    /// Each folder is asked for by its prefix with the trailing slash (`orig/`), which Supabase reads
    /// as that folder (it adds the slash when it is missing), because only that form names a folder
    /// with an empty name: `orig//double.jpg` is listed as an entry `""` of `orig/`, whose objects
    /// `orig//` lists, where `orig/` would list `orig/` again.
    ///
    /// A store that ignores `offset` (the same full page again), lists without end or names folders
    /// deeper than a key can be stops the listing with an error naming it (``ListingBound``).
    public func list(_ folder: ObjectLocation) throws(ImagePipeError) -> [ListedObject] {
        try supabase.checkBucket(folder.bucket)
        var objects: [ListedObject] = []
        var folders = [folder.asFolder.key]
        var held = 0
        while let prefix = folders.popLast() {
            // No object's key is longer than a key may be: a folder past that is a store's loop
            // (an empty-named folder in itself, `orig///…`), which would hold ever longer prefixes.
            guard prefix.utf8.count <= ListingBound.maxKeyBytes else {
                throw .configuration(
                    "listing \(folder) stopped: the store named a folder longer than the \(ListingBound.maxKeyBytes) bytes a key may have")
            }
            var offset = 0
            var previous: [String] = []
            while true {
                let entries = try page(folder.bucket, prefix: prefix, offset: offset)
                let listed = Self.listed(entries, prefix: prefix, in: folder)
                objects += listed.objects
                folders += listed.folders
                held += listed.objects.count + listed.folders.count
                try ListingBound.check(held, limit: configuration.maxListedEntries, listing: "\(folder)")
                guard entries.count == configuration.listPageSize else { break }
                // Name and id: a file and a folder of one name are two entries, and with pages of one
                // entry they come as two pages of the same name.
                let names = entries.map { "\($0["name"] as? String ?? "")\u{0}\($0["id"] as? String ?? "")" }
                guard names != previous else {
                    throw .configuration(
                        "listing \(folder) stopped: the store gave the same page of '\(prefix)' again at offset \(offset)")
                }
                previous = names
                offset += entries.count
            }
        }
        return objects
    }

    /// The objects and the folders (their prefixes, ending in `/`) among one page of the entries
    /// of `prefix` (empty or ending in `/`). An entry with an empty name is the folder of an empty
    /// segment (`orig//double.jpg` in `orig/`), never an object: the object it could also be, `orig/`,
    /// is a console's folder marker, which is no source.
    package static func listed(
        _ entries: [[String: Any]], prefix: String, in folder: ObjectLocation
    ) -> (objects: [ListedObject], folders: [String]) {
        var objects: [ListedObject] = []
        var folders: [String] = []
        for entry in entries {
            guard let name = entry["name"] as? String else { continue }
            let key = prefix + name
            guard entry["id"] is String, !name.isEmpty else {
                folders.append(key + "/")
                continue
            }
            let metadata = entry["metadata"] as? [String: Any] ?? [:]
            objects.append(
                ListedObject(
                    location: folder.sibling(key: key), bytes: metadata["size"] as? Int,
                    etag: FetchedObject.unquoted(metadata["eTag"] as? String)))
        }
        return (objects, folders)
    }

    /// A list answer's entries, or nil when it is not a JSON array of objects.
    package static func entries(_ response: HTTPResponse) -> [[String: Any]]? {
        (try? JSONSerialization.jsonObject(with: response.body)) as? [[String: Any]]
    }

    /// One page of one folder's entries.
    private func page(_ bucket: String, prefix: String, offset: Int) throws(ImagePipeError) -> [[String: Any]] {
        let body: [String: Any] = [
            "prefix": prefix, "limit": configuration.listPageSize, "offset": offset,
            "sortBy": ["column": "name", "order": "asc"],
        ]
        let request = HTTPRequest(
            method: "POST", url: supabase.url("/storage/v1/object/list/\(bucket)"),
            headers: supabase.authorizationHeaders + [("Content-Type", "application/json")],
            body: (try? JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])) ?? Data())
        let location = "supabase://\(bucket)/\(prefix)"
        let response: HTTPResponse
        do {
            response = try supabase.retrier.run("list \(location)") { (_) throws(RequestFailure) in try supabase.send(request) }
        } catch {
            throw .configuration("cannot list \(location): \(error.failure)")
        }
        guard let entries = Self.entries(response) else {
            throw .configuration("cannot list \(location): the answer is not a list of objects")
        }
        return entries
    }

    /// `GET /storage/v1/object/info/authenticated/BUCKET/KEY`: size and ETag, no body.
    public func info(_ location: ObjectLocation) throws(ImagePipeError) -> ListedObject? {
        let found: [String: Any]?
        do {
            found = try supabase.objectInfo(bucket: location.bucket, key: location.key)
        } catch {
            throw error.failure.sourceError(location.description, attempts: error.attempts, isNotFound: false, maxBytes: .max)
        }
        return found.map { info in
            ListedObject(location: location, bytes: SupabaseStorage.size(inObjectInfo: info), etag: FetchedObject.unquoted(info["etag"] as? String))
        }
    }

    /// `GET /storage/v1/object/authenticated/BUCKET/KEY`, retried; an answer declaring more than
    /// `maxBytes` is abandoned before its body is read.
    public func read(_ location: ObjectLocation, maxBytes: Int) throws(ImagePipeError) -> FetchedObject {
        let request = HTTPRequest(
            method: "GET", url: supabase.url("/storage/v1/object/authenticated/\(location.bucket)/\(location.key)"),
            headers: supabase.authorizationHeaders, maxResponseBytes: maxBytes)
        do {
            let response = try supabase.retrier.run("GET \(location)") { (_) throws(RequestFailure) in try supabase.send(request) }
            return FetchedObject(data: response.body, etag: FetchedObject.unquoted(response.header("ETag")))
        } catch {
            throw error.failure.sourceError(
                location.description, attempts: error.attempts,
                isNotFound: SupabaseClient.isNotFound(error.failure), maxBytes: maxBytes)
        }
    }
}
