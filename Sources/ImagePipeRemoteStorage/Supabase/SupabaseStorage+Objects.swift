// Looking up, removing and probing Supabase Storage objects: object info with its user metadata, DELETE, the bucket.
package import Foundation
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
        return found.map { Self.existingObject(info: $0, url: configuration.objectURL(forKey: fullKey)) }
    }

    /// An object-info answer as a JSON object; empty when it is none.
    package static func objectInfo(_ body: Data) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:]
    }

    /// The size an object-info answer gives: nil when it gives none, or none that can be a size.
    package static func size(inObjectInfo info: [String: Any]) -> Int? {
        (info["size"] as? Int).flatMap { $0 >= 0 ? $0 : nil }
    }

    /// What an object-info answer says of an object: its recorded origin (the user metadata), size
    /// and the Cache-Control Supabase serves it with (`cache_control`).
    package static func existingObject(info: [String: Any], url: String) -> ExistingObject {
        let fields = (info["metadata"] as? [String: Any] ?? [:]).compactMapValues { $0 as? String }
        return ExistingObject(
            origin: Origin(metadataFields: fields), bytes: Self.size(inObjectInfo: info) ?? 0, url: url,
            cacheControl: info["cache_control"] as? String)
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
