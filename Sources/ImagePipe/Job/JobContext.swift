// One job on its way through the FileHandler: each stage adds what it learns, and the result record is read off it at the end.
import Foundation

/// The processing context of one job.
///
/// The FileHandler's stages take it in turn: inspection adds the source, its origin and every
/// output's key with what the destination holds there; compression adds the image's format, size
/// and placeholder and each output's encoded object; storing adds each output's stored object. A
/// stage that ends the job sets ``failure`` or ``skip``, and the next stages pass it through.
/// ``result(at:)`` makes the record from whatever is there.
public struct JobContext: Sendable {
    /// One output and what each stage learnt of it.
    public struct Output: Sendable {
        /// The variant; nil for the stored original.
        public var spec: VariantSpec?
        /// Its key.
        public var key: String
        /// What the destination held under the key before this job (inspection).
        public var existing: ExistingObject?
        /// The object to put (compression); its body is taken out while it is being stored.
        public var object: StorageObject?
        /// What encoding made of it, as its record says (compression; the stored original's
        /// holds its size alone).
        public var encoding: VariantEncoding?
        /// What the store did with it.
        public var stored: Result<StoredObject, ImagePipeError>?

        /// Whether the output is to hold every frame of an animated source, as foreseen from the
        /// source's container at inspection (``FrameCount``). Kept as foreseen after encoding, also
        /// where the decoder reads the frames of a malformed file otherwise: the settings recorded
        /// are what a re-run foresees, so it finds the output in place rather than remaking it each time.
        public var animated = false
        /// Whether the output is to carry the source's HDR gain map, as foreseen from the source's
        /// container at inspection (``GainMap/kind(in:)``) and the variant's HDR policy; kept as
        /// foreseen after encoding, as ``animated`` is.
        public var hdr = false

        /// What the output's origin records as its variant: the spec (marked when the output is
        /// animated or carries HDR, ``VariantSpec/fingerprint(animated:hdr:)``), or `original`.
        public var fingerprint: String { spec?.fingerprint(animated: animated, hdr: hdr) ?? FileHandler.originalVariantName }

        /// Whether the key holds exactly this output: made from `origin`'s bytes with the same settings.
        public func isInPlace(for origin: Origin) -> Bool {
            origin.isSameOriginal(as: existing?.origin) && existing?.origin?.variant == fingerprint
        }

        /// What writing this output replaces of another original's: the output of an earlier
        /// version of `source` (the same name, other bytes) or of another original (or of no known
        /// one); nil when the key was free or held this original's own output.
        public func replacement(for origin: Origin?, source: String) -> VariantRecord.Replacement? {
            guard let existing, let origin, !origin.isSameOriginal(as: existing.origin) else { return nil }
            return existing.origin?.source == source ? .earlierVersion : .anotherOriginal
        }

        /// Whether the key held this original's output before the job, so a failed job leaves it in
        /// place instead of removing it.
        public func wasInPlace(for origin: Origin?) -> Bool {
            origin?.isSameOriginal(as: existing?.origin) ?? false
        }
    }

    /// The job.
    public let job: Job
    /// When the pipeline accepted it.
    public let acceptedAt: ContinuousClock.Instant
    /// When inspection ended (waiting for a compression slot starts here).
    public internal(set) var inspectedAt: ContinuousClock.Instant
    /// Where the time went so far.
    public internal(set) var timings = Timings()
    /// The source, once read.
    public internal(set) var source: SourceFile?
    /// The original as recorded with every output, once read.
    public internal(set) var origin: Origin?
    /// Every variant's output in order, then the original's when it is stored too.
    public internal(set) var outputs: [Output] = []
    /// The source format, once decoded.
    public internal(set) var format: SourceFormat?
    /// The source size as displayed, once decoded.
    public internal(set) var size: PixelSize?
    /// The original's placeholder, once decoded.
    public internal(set) var placeholder: Placeholder?
    /// What the analyses found in the original, once decoded.
    public internal(set) var facts: ImageFacts?
    /// The original's HDR gain map, once decoded, if it has one.
    public internal(set) var gainMap: GainMap?
    /// Why the job failed, once it has.
    public internal(set) var failure: ImagePipeError?
    /// Why the job was left alone, when it was.
    public internal(set) var skip: (code: JobResult.SkipCode, reason: String)?
    /// Keys reserved in this process for this job, released when it ends.
    var reservedKeys: [String] = []
    /// The job's trace when it is traced: each stage adds its spans, and the result carries them on.
    public internal(set) var trace: JobTrace?

    /// A job accepted at `acceptedAt`.
    public init(job: Job, acceptedAt: ContinuousClock.Instant = .now) {
        self.job = job
        self.acceptedAt = acceptedAt
        self.inspectedAt = acceptedAt
    }

    /// A job that ends before any stage runs: a batch's key collision, a dry run's skipped entry.
    public init(job: Job, result: JobResult) {
        self.init(job: job)
        if let failure = result.failure { self.failure = failure }
        if let code = result.skipCode { skip = (code, result.reason ?? "") }
    }

    /// Whether the job has ended: failed or skipped. A done job ends with its last put.
    public var hasEnded: Bool { failure != nil || skip != nil }

    /// The result record: failed with the failure, skipped with the outputs found in place, or done
    /// with every output stored.
    public func result(at now: ContinuousClock.Instant = .now) -> JobResult {
        var timings = self.timings
        timings.totalMs = (now - acceptedAt).milliseconds
        let status: JobResult.Status = failure != nil ? .failed : skip != nil ? .skipped : .done
        var result = JobResult(
            source: job.sourceName, status: status, error: failure, sha256: source?.sha256, format: format,
            width: size?.width, height: size?.height, bytes: source?.byteCount, timings: timings, attempts: job.attempt)
        result.sourceETag = source?.etag
        result.trace = trace
        switch status {
        case .failed:
            break
        case .skipped:
            result.skipCode = skip?.code
            result.reason = skip?.reason
            // Outputs in place describe their original as the run that made them did (outputs
            // written before imagepipe recorded it leave these out).
            if skip?.code == .upToDate, let image = outputs.lazy.compactMap(\.existing?.origin?.image).first {
                result.format = image.format
                result.width = image.width
                result.height = image.height
                result.placeholder = image.placeholder
                result.facts = image.facts
            }
            for output in outputs {
                guard let existing = output.existing else { continue }
                guard let spec = output.spec else {
                    result.original = StoredObject(key: output.key, url: existing.url, bytes: existing.bytes)
                    continue
                }
                // What the output's origin recorded of it: its size (outputs written before
                // imagepipe recorded it say 0x0).
                let size = PixelSize(width: existing.origin?.width ?? 0, height: existing.origin?.height ?? 0)
                result.variants.append(
                    VariantRecord(
                        name: spec.name, key: output.key, url: existing.url, format: spec.format, bytes: existing.bytes,
                        encoding: VariantEncoding(size: size)))
            }
        case .done:
            for output in outputs {
                guard case .success(let object) = output.stored else { continue }
                guard let spec = output.spec else {
                    result.original = object
                    continue
                }
                var record = VariantRecord(
                    name: spec.name, key: object.key, url: object.url, format: spec.format, bytes: object.bytes,
                    encoding: output.encoding ?? VariantEncoding(size: PixelSize(width: 0, height: 0)))
                record.replaced = output.replacement(for: origin, source: job.sourceName)
                result.variants.append(record)
            }
            result.placeholder = placeholder
            result.facts = facts
            result.gainMap = gainMap
        }
        return result
    }
}
