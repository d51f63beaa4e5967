// Reading a job's source in stage 1: a local file through SourceReader, an object through its SourceRepository.
import Foundation

extension FileHandler {
    /// The source's bytes (or, for a large local file, its open descriptor) and SHA-256.
    ///
    /// A local file is read exactly as ``SourceReader`` reads it (raw path, links followed or not).
    /// An object is downloaded whole, within ``Configuration/maxSourceBytes``: one listed as larger
    /// is refused without a request, and the repository refuses one whose answer declares more.
    func readSource(_ job: Job) throws(ImagePipeError) -> SourceFile {
        guard let object = job.object else {
            return try SourceReader.read(job.sourcePath, inMemoryLimit: configuration.inMemoryLimit, followingLinks: job.followsLinks)
        }
        let location = object.location
        guard let repository = sources[location.scheme] else {
            throw ImagePipeError(.unreadableSource, "\(location): no source repository reads \(location.scheme):// sources here")
        }
        if let bytes = object.bytes, bytes > configuration.maxSourceBytes {
            throw .sourceTooLarge(location.description, bytes: bytes, limit: configuration.maxSourceBytes)
        }
        let fetched = try repository.read(location, maxBytes: configuration.maxSourceBytes)
        guard !fetched.data.isEmpty else { throw ImagePipeError(.emptyFile, "empty file (0 bytes)") }
        return SourceFile(
            content: .bytes(fetched.data), sha256: SHA256Digest.hash(fetched.data).hex,
            byteCount: fetched.data.count, etag: fetched.etag)
    }
}
