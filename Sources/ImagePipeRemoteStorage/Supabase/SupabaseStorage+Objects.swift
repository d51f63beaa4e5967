// Looking up, removing and probing Supabase Storage objects: object info with its user metadata, DELETE, the bucket.
import Foundation
public import ImagePipe

extension SupabaseStorage {
    /// Object names are stored as text of at most 1024 bytes, the destination's prefix included.
    public var keyLimits: KeyLimits {
        KeyLimits(maxKeyBytes: 1024 - configuration.destination.prefix.utf8.count)
    }

    /// The origin as the JSON object Supabase keeps as user metadata.
    static func userMetadata(_ object: StorageObject) -> String? {
        guard let fields = object.origin?.metadataFields,
            let json = try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys])
        else { return nil }
        return String(decoding: json, as: UTF8.self)
    }

    /// `GET /storage/v1/object/info/authenticated/BUCKET/KEY`: size and user metadata, no body.
    public func existing(_ key: String) throws(ImagePipeError) -> ExistingObject? {
        let fullKey = configuration.destination.fullKey(key)
        let found: [String: Any]?
        do {
            found = try supabase.objectInfo(bucket: configuration.destination.bucket, key: fullKey)
        } catch {
            throw error.failure.imagePipeError("info supabase://\(configuration.destination.bucket)/\(fullKey)", attempts: error.attempts)
        }
        guard let info = found else { return nil }
        let fields = (info["metadata"] as? [String: Any] ?? [:]).compactMapValues { $0 as? String }
        return ExistingObject(
            origin: Origin(metadataFields: fields), bytes: (info["size"] as? Int) ?? 0,
            url: configuration.objectURL(forKey: fullKey))
    }

    public func delete(_ key: String) throws(ImagePipeError) {
        try KeyTemplate.validate(key: key)
        let fullKey = configuration.destination.fullKey(key)
        let request = HTTPRequest(
            method: "DELETE", url: supabase.url("/storage/v1/object/\(configuration.destination.bucket)/\(fullKey)"),
            headers: supabase.authorizationHeaders)
        try run("delete", fullKey) { (_) throws(RequestFailure) in
            do throws(RequestFailure) {
                _ = try supabase.send(request)
            } catch {
                if !SupabaseClient.isNotFound(error) { throw error }
            }
        }
    }

    /// `GET /storage/v1/bucket/BUCKET`: a missing bucket, a refused key or an unreachable project
    /// stop the command before any image is decoded.
    public func probe() throws(ImagePipeError) {
        try supabase.checkBucket(configuration.destination.bucket)
    }
}
