// One resumable upload through Supabase's TUS endpoint: create, send 6 MiB chunks, resume after failures.
import Foundation
import ImagePipe

/// The TUS 1.0.0 protocol as Supabase Storage speaks it.
///
/// A failed chunk is not simply resent: the server may have kept part of it, so the next attempt
/// first asks (`HEAD`) where the upload stands and continues from there.
struct TUSUpload {
    let storage: SupabaseStorage
    let object: StorageObject
    let key: String

    private var configuration: SupabaseConfiguration { storage.configuration }

    func run() throws(ImagePipeError) {
        let endpoint = configuration.projectURL
        let body = object.body
        let creation = HTTPRequest(
            method: "POST",
            url: storage.supabase.url("/storage/v1/upload/resumable"),
            headers: storage.supabase.authorizationHeaders + [
                ("Tus-Resumable", "1.0.0"), ("Upload-Length", String(body.count)),
                ("Upload-Metadata", metadata), ("x-upsert", "true"),
            ])
        let location = try storage.run("resumable upload create", key) { (_) throws(RequestFailure) in
            let response = try storage.supabase.send(creation)
            guard let location = response.header("Location"), !location.isEmpty else {
                throw .server(status: response.status, code: "MissingLocation", message: "no upload URL in the answer", retryable: true)
            }
            return location.hasPrefix("http://") || location.hasPrefix("https://") ? location : endpoint.origin + location
        }

        var offset = 0
        while offset < body.count {
            let start = offset
            offset = try storage.run("resumable upload chunk at \(start) of", key) { (attempt) throws(RequestFailure) in
                // After a failure the server may hold more (or less) than we think.
                let from = attempt == 1 ? start : try currentOffset(location)
                guard from < body.count else { return from }
                let end = min(from + configuration.chunkSize, body.count)
                let chunk = body[(body.startIndex + from)..<(body.startIndex + end)]
                let response = try storage.supabase.send(
                    HTTPRequest(
                        method: "PATCH", url: location,
                        headers: storage.supabase.authorizationHeaders + [
                            ("Tus-Resumable", "1.0.0"), ("Upload-Offset", String(from)),
                            ("Content-Type", "application/offset+octet-stream"),
                        ],
                        body: chunk))
                guard let reported = response.header("Upload-Offset").flatMap(Int.init), reported > from, reported <= body.count else {
                    throw .server(
                        status: response.status, code: "BadUploadOffset",
                        message: "the server did not confirm the chunk", retryable: true)
                }
                return reported
            }
        }
    }

    /// Where the server's copy of the upload ends.
    private func currentOffset(_ location: String) throws(RequestFailure) -> Int {
        let response = try storage.supabase.send(
            HTTPRequest(
                method: "HEAD", url: location,
                headers: storage.supabase.authorizationHeaders + [("Tus-Resumable", "1.0.0")]))
        guard let offset = response.header("Upload-Offset").flatMap(Int.init), offset >= 0 else {
            throw .server(status: response.status, code: "BadUploadOffset", message: "the server did not report an offset", retryable: true)
        }
        return offset
    }

    /// TUS metadata: comma-separated `name base64(value)` pairs.
    private var metadata: String {
        var pairs = [("bucketName", configuration.destination.bucket), ("objectName", key), ("contentType", object.contentType)]
        // Supabase's clients send cacheControl as seconds and it serves `max-age=` that many
        // (`no-cache` goes as 0: revalidated each time, as it asks).
        if let maxAge = CacheControl.maxAge(object.cacheControl) { pairs.append(("cacheControl", String(maxAge))) }
        if let userMetadata = SupabaseStorage.userMetadata(object) { pairs.append(("metadata", userMetadata)) }
        return pairs.map { "\($0.0) \(Data($0.1.utf8).base64EncodedString())" }.joined(separator: ",")
    }
}
