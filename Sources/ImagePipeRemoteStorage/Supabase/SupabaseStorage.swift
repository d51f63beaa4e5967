// Supabase Storage: standard uploads for small objects, resumable (TUS) uploads for large ones.
import Foundation
public import ImagePipe
public import Logging

/// Stores objects in a Supabase Storage bucket under a prefix, through its HTTP API.
///
/// Objects up to ``SupabaseConfiguration/resumableThreshold`` go up in one
/// `POST /storage/v1/object/BUCKET/KEY`, with `x-upsert: false` when the key must be new; larger ones through the TUS
/// endpoint in 6 MiB chunks, resuming from the offset the server reports after a failed chunk.
/// Safe to call from many threads.
public final class SupabaseStorage: StorageRepository, Sendable {
    /// The configuration.
    public let configuration: SupabaseConfiguration
    let supabase: SupabaseClient
    var logger: Logger { supabase.logger }

    /// Creates the storage. Nothing is sent until the first put.
    public init(
        configuration: SupabaseConfiguration, logger: Logger = Logger(label: "imagepipe.supabase"),
        quota: RetryQuota = RetryQuota()
    ) {
        self.configuration = configuration
        supabase = SupabaseClient(configuration: configuration, logger: logger, quota: quota)
    }

    public var location: String { "supabase://\(configuration.destination.bucket)/\(configuration.destination.prefix)" }

    /// Requests sent and connections opened so far.
    public var httpStatistics: CurlHTTPClient.Statistics { supabase.http.statistics }

    public func put(_ object: StorageObject) throws(ImagePipeError) -> StoredObject {
        try KeyTemplate.validate(key: object.key)
        try keyLimits.check(object.key)
        let key = configuration.destination.fullKey(object.key)
        if object.body.count > configuration.resumableThreshold {
            try TUSUpload(storage: self, object: object, key: key).run()
        } else if try !putStandard(object, key: key) {
            // The key was free when looked up and is taken now.
            return try settleTakenKey(object, url: configuration.objectURL(forKey: key))
        }
        logger.trace("stored", metadata: ["key": "\(object.key)", "bytes": .stringConvertible(object.body.count)])
        return StoredObject(key: object.key, url: configuration.objectURL(forKey: key), bytes: object.body.count)
    }

    /// One upload; false when the object was to be new (`x-upsert: false`) and the key is taken.
    private func putStandard(_ object: StorageObject, key: String) throws(ImagePipeError) -> Bool {
        let upsert = object.policy == .create ? "false" : "true"
        var headers =
            supabase.authorizationHeaders + [
                ("Content-Type", object.contentType), ("x-upsert", upsert),
                ("Content-MD5", Data(Digests.md5(object.body)).base64EncodedString()),
            ]
        if let cacheControl = object.cacheControl, !cacheControl.isEmpty {
            headers.append(("Cache-Control", cacheControl))
        }
        // Supabase keeps `x-metadata` (base64 of a JSON object) as the object's user metadata.
        if let userMetadata = Self.userMetadata(object) {
            headers.append(("x-metadata", Data(userMetadata.utf8).base64EncodedString()))
        }
        let request = HTTPRequest(
            method: "POST", url: supabase.url("/storage/v1/object/\(configuration.destination.bucket)/\(key)"),
            headers: headers, body: object.body)
        return try run("upload", key) { (_) throws(RequestFailure) -> Bool in
            do throws(RequestFailure) {
                _ = try supabase.send(request)
                return true
            } catch {
                if object.policy == .create, Self.isDuplicate(error) { return false }
                throw error
            }
        }
    }

    /// Supabase answers an upload without upsert onto a taken key with 409 (or 400 carrying `Duplicate`).
    static func isDuplicate(_ failure: RequestFailure) -> Bool {
        guard case .server(let status, let code, _, _) = failure else { return false }
        return status == 409 || code == "Duplicate"
    }

    /// Runs one retried step, turning its final failure into an ImagePipeError naming the object.
    func run<T>(_ what: String, _ key: String, _ attempt: (Int) throws(RequestFailure) -> T) throws(ImagePipeError) -> T {
        do {
            return try supabase.retrier.run("\(what) \(key)", attempt)
        } catch {
            throw error.failure.imagePipeError("\(what) supabase://\(configuration.destination.bucket)/\(key)", attempts: error.attempts)
        }
    }
}
