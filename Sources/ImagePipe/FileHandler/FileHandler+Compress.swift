// Stage 2 of a job: decode the source once and encode every output.
import Foundation

extension FileHandler {
    /// Decodes and encodes an inspected job; never throws, a failure is carried in the result.
    public func compress(_ inspected: InspectedJob) -> PreparedJob {
        let start = ContinuousClock.now
        var prepared = PreparedJob(job: inspected.job, acceptedAt: inspected.acceptedAt)
        prepared.timings = inspected.timings
        prepared.timings.queueMs += (start - inspected.inspectedAt).milliseconds
        prepared.sha256 = inspected.source?.sha256
        prepared.bytes = inspected.source?.byteCount
        prepared.sourceETag = inspected.source?.etag
        prepared.reservedKeys = inspected.reservedKeys
        guard let source = inspected.source, let origin = inspected.origin else {
            prepared.failure = ImagePipeError(.unreadableSource, "the source was not read")
            return prepared
        }

        let outcome = Result { () throws(ImagePipeError) in
            try compressor.compress(
                SourceImage(name: inspected.job.relativePath, content: source.content),
                variants: configuration.variants, limits: configuration.limits)
        }
        // A file kept open was decoded after it was hashed: what was made, or the decoder's failure,
        // must be of the bytes the hash says (a file cut short under the decoder is not a broken image).
        if case .file(let opened) = source.content, opened.hasChanged {
            prepared.failure = OpenedFile.changedError
            return prepared
        }
        let compressed: CompressedImage
        switch outcome {
        case .success(let made): compressed = made
        case .failure(let error):
            prepared.failure = error
            return prepared
        }
        prepared.format = compressed.sourceFormat
        prepared.size = compressed.sourceSize
        prepared.placeholder = compressed.placeholder
        prepared.timings.decodeMs = compressed.decodeTime.milliseconds
        prepared.timings.encodeMs = compressed.encodeTime.milliseconds

        func output(_ plan: InspectedJob.PlannedOutput, _ size: PixelSize, _ body: Data, _ contentType: String) -> PreparedJob.Output {
            var marked = origin
            marked.width = size.width
            marked.height = size.height
            marked.variant = plan.fingerprint
            let sameOriginal = origin.isSameOriginal(as: plan.existing?.origin)
            let policy: WritePolicy = plan.existing == nil ? .create : sameOriginal ? .replaceSameOriginal : .replaceAny
            return PreparedJob.Output(
                spec: plan.spec, size: size,
                object: StorageObject(
                    key: plan.key, body: body, contentType: contentType, cacheControl: configuration.cacheControl,
                    origin: marked, policy: policy),
                wasInPlace: sameOriginal)
        }
        prepared.outputs = zip(compressed.variants, inspected.outputs).map { encoded, plan in
            var made = output(plan, encoded.size, encoded.data, encoded.spec.format.contentType)
            made.quality = encoded.quality
            made.score = encoded.score.map { ($0 * 100).rounded() / 100 }
            made.encodes = encoded.spec.isAuto ? encoded.encodes : nil
            return made
        }
        if configuration.storeOriginal, let plan = inspected.outputs.last, plan.spec == nil {
            do {
                prepared.outputs.append(
                    output(
                        plan, compressed.sourceSize, try Self.originalBody(source),
                        compressed.sourceFormat.mediaType))
            } catch {
                prepared.failure = error
            }
        }
        return prepared
    }

    /// The untouched original's bytes.
    private static func originalBody(_ source: SourceFile) throws(ImagePipeError) -> Data {
        switch source.content {
        case .bytes(let data):
            return data
        case .file(let opened):
            // Read, not mapped: a file cut short under a mapping would kill the process (SIGBUS).
            return try opened.readAll()
        }
    }
}
