// One unit of work: a source (a file or an object in a store) and the name it goes by in keys and manifests.
import Synchronization

/// A source image to process.
public struct Job: Sendable {
    /// Where the original is: a local file or an object in a store, one value (see ``SourceLocation``).
    public var source: SourceLocation
    /// The source's path relative to the batch root or inbox, e.g. `2024/trip/IMG_1.jpg`; it
    /// provides `{dir}` and `{stem}` for keys and the `source` field of the result.
    public var relativePath: String
    /// Which attempt this is, from 1.
    public var attempt: Int
    /// Tripped when the job's result is no longer wanted (its claim was lost, or it was cancelled):
    /// the pipeline then stops it at its next safe point, before compressing or before storing.
    public var cancellation: JobCancellation?
    /// A clash with another source's keys, found before a batch started (`IMG_1.HEIC` beside
    /// `IMG_1.JPG`, or `IMG_1.xmp` beside it): it fails with it only once its first bytes show it is
    /// an image; as anything else it is skipped like any other non-image, whatever its name.
    public var keyCollision: ImagePipeError?
    /// The point `cover` crops keep, given with the job; nil to crop where each variant says.
    public var focus: FocalPoint?
    /// The producer's span, when the job was queued with a `traceparent`: the job span continues its trace.
    public var traceParent: TraceParent?
    /// When the claim that brought the job from its queue ran: a traced job's span starts there,
    /// with the claim as its first child. Nil for a batch's jobs.
    public var claimedDuring: ClosedRange<ContinuousClock.Instant>?
    /// How many of the job's earlier attempts ended with its decoder failing in its helper process:
    /// crashed (`decoder_crashed`) or stopped at `--job-timeout` (`job_timeout`), see
    /// ``ImagePipeError/Code/isDecoderFailure``. A queue fills it when it claims the job, from what it
    /// keeps of the job's earlier attempts; the worker decides by it whether another such failure is
    /// final. A crash of the same image twice is the image's doing, not the machine's.
    public var earlierDecoderFailures = 0
    /// Where the original lies when that is not where it is read: a queue directory reads a
    /// delivery from its worker's claim area, but it was delivered into the inbox. Nil otherwise.
    public var deliveredAt: String?

    /// A job reading a local file (see ``SourceLocation/file(path:raw:followsLinks:)``).
    public init(path: String, relativePath: String, attempt: Int = 1, rawPath: RawPath? = nil, followsLinks: Bool = true) {
        self.init(source: .file(path: path, raw: rawPath, followsLinks: followsLinks), relativePath: relativePath, attempt: attempt)
    }

    /// A job reading an object; `relativePath` (its key relative to the listed folder) gives
    /// `{dir}` and `{stem}`.
    public init(object: ListedObject, relativePath: String, attempt: Int = 1) {
        self.init(source: .object(object), relativePath: relativePath, attempt: attempt)
    }

    /// A job reading `source`.
    public init(source: SourceLocation, relativePath: String, attempt: Int = 1) {
        self.source = source
        self.relativePath = relativePath
        self.attempt = attempt
    }

    /// Where to read the source: a file's path (escaped where a name is not UTF-8), or an object's URL.
    public var path: String {
        switch source {
        case .file(let path, _, _): path
        case .object(let object): object.location.description
        }
    }

    /// A file's bytes when a name in its path is not valid UTF-8 (``path`` and ``relativePath``
    /// then hold the escaped form, see ``RawPath/escaped``); nil otherwise.
    public var rawPath: RawPath? {
        if case .file(_, let raw, _) = source { raw } else { nil }
    }

    /// Whether a symbolic link at a file's path is read through (see ``SourceLocation``).
    public var followsLinks: Bool {
        if case .file(_, _, let follows) = source { follows } else { true }
    }

    /// The object to read when the source is in object storage, with its size and ETag as listed.
    public var object: ListedObject? {
        if case .object(let object) = source { object } else { nil }
    }

    /// The name results and recorded origins give the source: an object's full URL, a file's
    /// relative path.
    public var sourceName: String { object == nil ? relativePath : path }

    /// Where the original lies, as every output records it (``Origin/location``): an object's URL,
    /// else the place it was delivered to (``deliveredAt``), else its file's absolute path.
    /// `imagepipe prune` tells by it whether an output was made from the sources it is given.
    public var location: String {
        if object != nil { return path }
        return deliveredAt ?? LocalPath.absolute(path)
    }

    /// What is opened: ``rawPath`` when set, else ``path``.
    public var sourcePath: RawPath { rawPath ?? RawPath(path) }
}

extension Job: Equatable {
    /// The same source under the same name and attempt, with the same history of decoder failures
    /// (a cancellation token is no part of it).
    public static func == (lhs: Job, rhs: Job) -> Bool {
        lhs.source == rhs.source && lhs.relativePath == rhs.relativePath && lhs.attempt == rhs.attempt && lhs.focus == rhs.focus
            && lhs.earlierDecoderFailures == rhs.earlierDecoderFailures && lhs.deliveredAt == rhs.deliveredAt
            && lhs.traceParent == rhs.traceParent
    }
}

/// Whether a job's result is still wanted, and whether it may still start; shared by the job's copies.
public final class JobCancellation: Sendable {
    private static let cancelled: UInt8 = 1, withdrawn: UInt8 = 2
    private let state = Atomic<UInt8>(0)

    /// A token not tripped.
    public init() {}

    /// Stops the job at its next safe point.
    public func cancel() { state.bitwiseOr(Self.cancelled, ordering: .relaxed) }

    /// Gives the job back if it has not started its next stage yet (reading, or compressing): a
    /// worker shutting down gracefully finishes what runs and returns what only waits.
    public func withdraw() { state.bitwiseOr(Self.withdrawn, ordering: .relaxed) }

    /// Whether ``cancel()`` was called.
    public var isCancelled: Bool { state.load(ordering: .relaxed) & Self.cancelled != 0 }

    /// Whether ``withdraw()`` was called.
    public var isWithdrawn: Bool { state.load(ordering: .relaxed) & Self.withdrawn != 0 }
}
