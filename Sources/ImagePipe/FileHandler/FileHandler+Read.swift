// Reading a job's source in stage 1: a local file through SourceReader, an object through its SourceRepository; ImageSignature judges both.
import Foundation

extension FileHandler {
    /// The source's bytes (or, for a large local file, its open descriptor) and SHA-256, or why it
    /// is no image (``ImageSignature``, judged on its first bytes whatever the job is called).
    ///
    /// A local file is read exactly as ``SourceReader`` reads it (raw path, links followed or not),
    /// and no further than its first bytes when it is no image. An object is downloaded whole,
    /// within ``Configuration/maxSourceBytes``: one listed as larger is refused without a request,
    /// and the repository refuses one whose answer declares more. Its first bytes are judged from
    /// that download, so no object is asked for twice.
    func readSource(_ job: Job) throws(ImagePipeError) -> SourceReader.Outcome {
        let object: ListedObject
        switch job.source {
        case .file(let path, let raw, let followsLinks):
            // Local paths are absolute; a listed `https://…` line keeps its text (``SourceScanner``).
            if !path.hasPrefix("/"), let scheme = ObjectLocation.unsupportedScheme(of: path) {
                throw ImagePipeError(.unreadableSource, ObjectLocation.unsupportedReason(scheme))
            }
            return try SourceReader.read(
                raw ?? RawPath(path), imagesOnly: true, inMemoryLimit: configuration.inMemoryLimit, followingLinks: followsLinks)
        case .object(let listed):
            object = listed
        }
        let location = object.location
        guard let repository = sources[location.scheme] else {
            throw ImagePipeError(
                .unreadableSource, "\(location): this worker reads no \(location.scheme):// sources: \(ObjectLocation.settingsHint(location.scheme))")
        }
        if let bytes = object.bytes, bytes > configuration.maxSourceBytes {
            throw .sourceTooLarge(location.description, bytes: bytes, limit: configuration.maxSourceBytes)
        }
        let fetched = try repository.read(location, maxBytes: configuration.maxSourceBytes)
        // An empty object has no signature: it is skipped here, never decoded.
        if let reason = ImageSignature.skipReason(head: fetched.data.prefix(ImageSignature.headLength)) {
            return .notAnImage(reason: reason)
        }
        // The object's own point, unless the job brings one (which wins, so a bad one here is moot).
        let focus = job.focus == nil ? try FetchedObject.focus(metadata: fetched.focusMetadata) : nil
        return .image(
            SourceFile(
                content: .bytes(fetched.data), sha256: SHA256Digest.hash(fetched.data).hex,
                byteCount: fetched.data.count, etag: fetched.etag, focus: focus))
    }
}
