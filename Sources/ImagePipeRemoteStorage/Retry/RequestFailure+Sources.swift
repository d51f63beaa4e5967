// What a failed read of a source object means for the job: not found, forbidden, too large, unavailable.
import ImagePipe

extension RequestFailure {
    /// The ImagePipeError a source read reports once its retries are over.
    ///
    /// - Parameters:
    ///   - source: the object's URL, which every reason names.
    ///   - isNotFound: whether the store said the object does not exist (S3: 404; Supabase also
    ///     answers 400 with `not_found`).
    ///   - maxBytes: the size limit the read had, for the reason of an answer refused as too large.
    func sourceError(_ source: String, attempts: Int, isNotFound: Bool, maxBytes: Int) -> ImagePipeError {
        if case .transport(let error) = self, error.isTooLarge {
            return .sourceTooLarge(source, bytes: error.declaredLength, limit: maxBytes)
        }
        if isNotFound { return ImagePipeError(.sourceNotFound, "\(source) does not exist (\(description))") }
        if case .server(let status, _, _, _) = self, status == 401 || status == 403 {
            return ImagePipeError(.sourceForbidden, "reading \(source) is refused (\(description)): check the credentials and that they may read it")
        }
        if isRetryable { return ImagePipeError(.storageUnavailable, exhausted("reading \(source)", attempts: attempts)) }
        return ImagePipeError(.unreadableSource, "reading \(source): \(description)")
    }
}
