// The seam between the FileHandler and an image library: one source in, every variant out.
public import Foundation

/// Turns one source image into encoded variants, decoding it once.
///
/// Implementations are called concurrently from the pipeline's compression queue, one source per
/// call, and block while they work (CPU work; see ``JobPipeline``); they must be safe to call from
/// several threads at once.
public protocol ImageCompressor: Sendable {
    /// Decodes `source` once and encodes every variant from it, holding at its peak no more
    /// working memory than it took from `memory` (the pipeline's, shared with the other
    /// compressions running at the same time).
    ///
    /// - Throws: ``ImagePipeError`` with an input code (`unsupportedFormat`, `corruptImage`,
    ///   `imageTooLarge`, `emptyFile`) when the source cannot be used.
    func compress(
        _ source: SourceImage, variants: [VariantSpec], limits: CompressionLimits, memory: WorkingMemory
    ) throws(ImagePipeError) -> CompressedImage

    /// Called when the pipeline has no job in flight: a chance to give memory back to the system
    /// that busy moments keep for the next image.
    func releaseMemory()

    /// Reads `source`'s header without decoding pixels and refuses it as ``compress(_:variants:limits:memory:)``
    /// would from what the header shows (a format not accepted, more pixels than `limits` allow, an
    /// animation whose frames `variants` would all decode over the frame budget, a header that
    /// cannot be read). `--dry-run` predicts a run with it. Nil when the compressor cannot tell
    /// without decoding.
    func readHeader(_ source: SourceImage, variants: [VariantSpec], limits: CompressionLimits) throws(ImagePipeError) -> SourceHeader?

    /// Which sources the pipeline may hand over several at a time, through
    /// ``compress(batch:variants:limits:memory:)``: ``CompressionBatching/none`` where one call
    /// per source costs nothing more.
    var batching: CompressionBatching { get }

    /// Compresses each source as ``compress(_:variants:limits:memory:)`` would, one after the
    /// other, and gives one result per source, in order: one source's failure is its own.
    func compress(
        batch sources: [SourceImage], variants: [VariantSpec], limits: CompressionLimits, memory: WorkingMemory
    ) -> [Result<CompressedImage, ImagePipeError>]

    /// Opens what the batches one compression lane makes in a row may share (a sandboxed
    /// compressor's helper, started once for them); nil where batches share nothing.
    func openSession() -> (any CompressionSession)?

    /// ``compress(batch:variants:limits:memory:)`` within `session` (one ``openSession()`` opened).
    func compress(
        batch sources: [SourceImage], variants: [VariantSpec], limits: CompressionLimits, memory: WorkingMemory,
        session: (any CompressionSession)?
    ) -> [Result<CompressedImage, ImagePipeError>]
}

/// What a compressor keeps across the batches of small sources one compression lane takes in a
/// row, while more keep waiting: a sandboxed compressor's helper serves them all, up to a bound, for
/// one start. Used by one lane at a time, and closed when the lane stops taking batches.
public protocol CompressionSession: AnyObject {
    /// How many more sources it may take; at 0 the lane closes it.
    var room: Int { get }

    /// Ends it, and what it kept.
    func close()
}

/// Which sources a compressor takes several at a time: small ones held in memory, whose image
/// work costs little beside a hand-over of its own (a sandboxed helper's round trip, see
/// ``JobPipeline``).
public struct CompressionBatching: Sendable, Hashable {
    /// The most sources in one call; 1 for none.
    public var sources: Int
    /// The largest source (its bytes read whole) a call may include.
    public var sourceBytes: Int
    /// The most source bytes one call may hold in all.
    public var totalBytes: Int

    /// One source a call.
    public static let none = CompressionBatching(sources: 1, sourceBytes: 0, totalBytes: 0)

    /// Creates a batching rule.
    public init(sources: Int, sourceBytes: Int, totalBytes: Int) {
        self.sources = max(1, sources)
        self.sourceBytes = sourceBytes
        self.totalBytes = totalBytes
    }

    /// Whether a source held this way may be in a batch: in memory, and small enough.
    public func admits(_ content: SourceImage.Content) -> Bool {
        guard sources > 1, case .bytes(let data) = content else { return false }
        return data.count <= sourceBytes
    }
}

extension ImageCompressor {
    /// Keeps nothing back by default.
    public func releaseMemory() {}

    /// Cannot tell by default.
    public func readHeader(_ source: SourceImage, variants: [VariantSpec], limits: CompressionLimits) throws(ImagePipeError) -> SourceHeader? {
        nil
    }

    /// One source a call, by default.
    public var batching: CompressionBatching { .none }

    /// One source after the other, by default.
    public func compress(
        batch sources: [SourceImage], variants: [VariantSpec], limits: CompressionLimits, memory: WorkingMemory
    ) -> [Result<CompressedImage, ImagePipeError>] {
        sources.map { source in Result { () throws(ImagePipeError) in try compress(source, variants: variants, limits: limits, memory: memory) } }
    }

    /// No session, by default: batches share nothing.
    public func openSession() -> (any CompressionSession)? { nil }

    /// As without a session, by default.
    public func compress(
        batch sources: [SourceImage], variants: [VariantSpec], limits: CompressionLimits, memory: WorkingMemory,
        session: (any CompressionSession)?
    ) -> [Result<CompressedImage, ImagePipeError>] {
        compress(batch: sources, variants: variants, limits: limits, memory: memory)
    }

    /// Compresses outside a pipeline, with no limit on working memory.
    public func compress(_ source: SourceImage, variants: [VariantSpec], limits: CompressionLimits) throws(ImagePipeError) -> CompressedImage {
        try compress(source, variants: variants, limits: limits, memory: .unlimited)
    }
}

/// Limits checked before any pixel is decoded.
public struct CompressionLimits: Sendable, Hashable {
    /// The largest pixel count a source may declare: width × height of one frame, and for an
    /// animated source whose frames are all decoded, frames × width × height.
    public var maxPixels: Int
    /// The most frames an animated source whose frames are all decoded may declare: each frame
    /// costs its own resize and encode whatever its size, so a file of many tiny frames is refused
    /// even within ``maxPixels``.
    public var maxFrames: Int

    /// The default: 100 million pixels, 1000 frames.
    public static let `default` = CompressionLimits(maxPixels: 100_000_000)

    /// The frames allowed by default: over 30 seconds at 30 frames a second.
    public static let defaultMaxFrames = 1000

    /// Creates limits.
    public init(maxPixels: Int, maxFrames: Int = defaultMaxFrames) {
        self.maxPixels = maxPixels
        self.maxFrames = maxFrames
    }
}

/// What a source's header says, read without decoding pixels.
public struct SourceHeader: Sendable, Hashable {
    /// The format, as the decoder would read it.
    public var format: SourceFormat
    /// The size as displayed (after orientation).
    public var size: PixelSize

    /// Creates a header.
    public init(format: SourceFormat, size: PixelSize) {
        self.format = format
        self.size = size
    }
}

/// The bytes of a source image, in memory or in a file kept open.
public struct SourceImage: Sendable {
    /// Where the bytes are.
    public enum Content: Sendable {
        /// The whole file, already read.
        case bytes(Data)
        /// A file kept open, which the compressor reads itself through ``OpenedFile/decoderPath``.
        case file(OpenedFile)
    }

    /// A name for error messages: the source's path relative to the batch or queue.
    public let name: String
    /// The encoded image.
    public let content: Content
    /// The point `cover` crops keep, from the job; it wins over each variant's ``CropPosition``.
    public var focus: FocalPoint?

    /// Creates a source.
    public init(name: String, content: Content, focus: FocalPoint? = nil) {
        self.name = name
        self.content = content
        self.focus = focus
    }
}

/// What the compressor made of one source.
public struct CompressedImage: Sendable {
    /// The decoder's name for the source format, e.g. `jpeg`, `png`, `heic`.
    public var sourceFormat: SourceFormat
    /// The source size as displayed, i.e. after EXIF orientation.
    public var sourceSize: PixelSize
    /// One encoded image per requested variant, in the same order.
    public var variants: [EncodedVariant]
    /// Time spent reading the header, decoding with shrink-on-load and converting colour.
    public var decodeTime: Duration
    /// Time spent resizing and encoding all variants.
    public var encodeTime: Duration
    /// The original's placeholder, when the compressor makes one.
    public var placeholder: Placeholder?
    /// What the analyses found in the original (``FactKinds`` says which ran); nil when none did.
    public var facts: ImageFacts?
    /// The HDR gain map the original carries, and whether the variants carry it too.
    public var gainMap: GainMap?
    /// When each step of the work ran, for the job's trace: made where the work ran (a sandboxed
    /// helper), checked by the worker against the time it waited for the answer.
    public var steps: [ImageStep] = []

    /// Creates a result.
    public init(sourceFormat: SourceFormat, sourceSize: PixelSize, variants: [EncodedVariant], decodeTime: Duration, encodeTime: Duration) {
        self.sourceFormat = sourceFormat
        self.sourceSize = sourceSize
        self.variants = variants
        self.decodeTime = decodeTime
        self.encodeTime = encodeTime
    }
}

/// One encoded variant: its bytes, and what encoding made of it.
public struct EncodedVariant: Sendable {
    /// The variant it was made for.
    public var spec: VariantSpec
    /// The encoded bytes (for libvips, its own buffer, not a copy).
    public var data: Data
    /// What encoding made of it: size, quality, score, ..., as its record will say.
    public var encoding: VariantEncoding

    /// Creates an encoded variant of `size`.
    public init(spec: VariantSpec, size: PixelSize, data: Data) {
        self.spec = spec
        self.data = data
        self.encoding = VariantEncoding(size: size)
    }
}

/// One step of an image's work and when it ran, in wall-clock nanoseconds (``WallClock``).
public struct ImageStep: Sendable, Equatable {
    /// What the step did; variants are named by their place in the job's list.
    public enum Name: Sendable, Equatable {
        /// Opening the header and checking the format, size and frames.
        case header
        /// The one decode (shrink-on-load, colour conversion, tone mapping, frames) and reading the gain map.
        case decode
        /// The analyses of the decode: the placeholder and the facts (``FactKinds``).
        case analyses
        /// Resizing and encoding one variant (its quality search included).
        case encode(variant: Int)
        /// Carrying the gain map into one variant.
        case gainMap(variant: Int)
    }

    public var name: Name
    public var start: UInt64
    public var end: UInt64

    public init(_ name: Name, start: UInt64, end: UInt64) {
        self.name = name
        self.start = start
        self.end = end
    }

    /// A step from two instants of this process.
    public init(_ name: Name, from start: ContinuousClock.Instant, to end: ContinuousClock.Instant) {
        self.init(name, start: WallClock.nanos(at: start), end: WallClock.nanos(at: end))
    }

    /// The most steps an image of `variants` variants has: a bound a helper's answer is held to.
    public static func limit(variants: Int) -> Int { 3 + 2 * variants }
}
