// A job after the compression stage: its encoded outputs waiting to be stored, or its failure.
import Foundation

/// A job after ``FileHandler/compress(_:)``.
public struct PreparedJob: Sendable {
    /// One output and where it goes: an encoded variant, or the original itself.
    public struct Output: Sendable {
        /// The variant; nil for the original.
        public var spec: VariantSpec?
        /// Its pixel size.
        public var size: PixelSize
        /// The object to put.
        public var object: StorageObject
        /// Whether the key already held this original's output before the job, so a failed job
        /// leaves it in place instead of removing it.
        public var wasInPlace: Bool
        /// The quality, score and encodes of an encoded variant, for its record.
        public var quality: Int?
        public var score: Double?
        public var encodes: Int?
    }

    /// The job.
    public var job: Job
    /// When the pipeline accepted it.
    public var acceptedAt: ContinuousClock.Instant
    /// Why it failed, if it did.
    public var failure: ImagePipeError?
    /// Source SHA-256, once read.
    public var sha256: String?
    /// Source size in bytes, once read.
    public var bytes: Int?
    /// The ETag of a source read from object storage.
    public var sourceETag: String?
    /// Source format, once decoded.
    public var format: SourceFormat?
    /// Source size as displayed, once decoded.
    public var size: PixelSize?
    /// The original's placeholder, once decoded.
    public var placeholder: Placeholder?
    /// The encoded outputs to store.
    public var outputs: [Output] = []
    /// Keys reserved in this process for this job (released when it completes).
    public var reservedKeys: [String] = []
    /// Timings so far.
    public var timings = Timings()

    init(job: Job, acceptedAt: ContinuousClock.Instant) {
        self.job = job
        self.acceptedAt = acceptedAt
    }
}
