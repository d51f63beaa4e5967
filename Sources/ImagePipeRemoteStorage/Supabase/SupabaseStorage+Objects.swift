// Looking up, removing and probing Supabase Storage objects: object info with its user metadata, DELETE, the bucket.
import Foundation
import ImagePipe

extension SupabaseStorage {
    /// Object names are stored as text of at most 1024 bytes, the destination's prefix included.
    public var keyLimits: KeyLimits {
        KeyLimits(maxKeyBytes: 1024 - configuration.destination.prefix.utf8.count)
    }

    /// The origin as the JSON object Supabase keeps as user metadata.
    static func userMetadata(_ object: StorageObject) -> String? {
        guard let fields = object.origin?.metadataFields,
              let json = try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys]) else { return nil }
        return String(decoding: json, as: UTF8.self)
    }

    /// `GET /storage/v1/object/info/authenticated/BUCKET/KEY`: size and user metadata, no body.
    public func existing(_ key: String) throws(ImagePipeError) -> ExistingObject? {
        let fullKey = configuration.destination.fullKey(key)
        let path = "\(configuration.projectURL.basePath)/storage/v1/object/info/authenticated/\(configuration.destination.bucket)/\(fullKey)"
        let request = HTTPRequest(method: "GET", url: configuration.projectURL.origin + PercentEncoding.encodePath(path),
                                  headers: authorizationHeaders)
        let response = try run("info", fullKey) { (_) throws(RequestFailure) -> HTTPResponse? in
            do throws(RequestFailure) {
                return try send(request)
            } catch {
                if Self.isNotFound(error) { return nil }
                throw error
            }
        }
        guard let response else { return nil }
        let info = (try? JSONSerialization.jsonObject(with: response.body)) as? [String: Any] ?? [:]
        let fields = (info["metadata"] as? [String: Any] ?? [:]).compactMapValues { $0 as? String }
        return ExistingObject(origin: Origin(metadataFields: fields), bytes: (info["size"] as? Int) ?? 0,
                              url: configuration.objectURL(forKey: fullKey))
    }

    public func delete(_ key: String) throws(ImagePipeError) {
        try KeyTemplate.validate(key: key)
        let fullKey = configuration.destination.fullKey(key)
        let path = "\(configuration.projectURL.basePath)/storage/v1/object/\(configuration.destination.bucket)/\(fullKey)"
        let request = HTTPRequest(method: "DELETE", url: configuration.projectURL.origin + PercentEncoding.encodePath(path),
                                  headers: authorizationHeaders)
        try run("delete", fullKey) { (_) throws(RequestFailure) in
            do throws(RequestFailure) {
                _ = try send(request)
            } catch {
                if !Self.isNotFound(error) { throw error }
            }
        }
    }

    /// `GET /storage/v1/bucket/BUCKET`: a missing bucket, a refused key or an unreachable project
    /// stop the command before any image is decoded.
    public func probe() throws(ImagePipeError) {
        let bucket = "supabase://\(configuration.destination.bucket)"
        let path = "\(configuration.projectURL.basePath)/storage/v1/bucket/\(configuration.destination.bucket)"
        let request = HTTPRequest(method: "GET", url: configuration.projectURL.origin + PercentEncoding.encodePath(path),
                                  headers: authorizationHeaders)
        do {
            _ = try retrier.run("GET \(bucket)") { (_) throws(RequestFailure) in try send(request) }
        } catch {
            if Self.isNotFound(error.failure) {
                throw .configuration("bucket \(bucket) does not exist in \(configuration.projectURL.origin)")
            }
            if case .server(let status, _, _, _) = error.failure, status == 401 || status == 403 {
                throw .configuration("access to bucket \(bucket) is denied (\(error.failure)): check SUPABASE_SERVICE_ROLE_KEY")
            }
            throw .configuration("cannot reach bucket \(bucket) at \(configuration.projectURL.origin): \(error.failure)")
        }
    }

    /// Supabase reports missing objects and buckets as 404, or as 400 with `"statusCode": "404"` / `not_found`.
    static func isNotFound(_ failure: RequestFailure) -> Bool {
        guard case .server(let status, let code, let message, _) = failure else { return false }
        return status == 404 || code == "not_found" || (status == 400 && (message ?? "").lowercased().contains("not found"))
    }
}
