// An image compressor that returns made-up bytes or scripted errors, and measures how it was called.
public import Foundation
public import ImagePipe
import Synchronization

/// Pretends to compress: every variant becomes a few bytes naming the source and variant.
///
/// It records how many calls ran at once, so tests can check the pipeline's concurrency limits,
/// and can be told to fail for chosen sources.
public final class ScriptedCompressor: ImageCompressor, Sendable {
    /// Decides the outcome of a call by source name: nil succeeds, an error fails.
    public typealias FailureRule = @Sendable (_ sourceName: String) -> ImagePipeError?

    private struct State {
        var calls: [String] = []
        var concurrent = 0
        var maxConcurrent = 0
        var live = 0
        var maxLive = 0
        var releases = 0
        var batches: [[String]] = []
    }

    private let state = Mutex(State())
    private let failure: FailureRule?
    private let work: Duration
    private let size: PixelSize
    private let gate: DispatchSemaphore?
    /// Which sources the pipeline may hand over several at a time (none by default).
    public let batching: CompressionBatching

    /// Creates a compressor; each call takes `work` and reports a source of `size`. With `held`,
    /// each call also waits until ``letOneThrough()`` lets it go: a test then decides when a job
    /// under way ends, whatever the machine's load.
    public init(
        failing: FailureRule? = nil, work: Duration = .zero, size: PixelSize = PixelSize(width: 4000, height: 3000), held: Bool = false,
        batching: CompressionBatching = .none
    ) {
        self.batching = batching
        self.failure = failing
        self.work = work
        self.size = size
        self.gate = held ? DispatchSemaphore(value: 0) : nil
    }

    /// A source this compressor takes: a JPEG's first bytes (the signature ``ImageSignature`` takes
    /// a file by, whatever its name), then `text`, which tells sources apart in their hashes.
    public static func image(_ text: String = "original bytes") -> Data {
        Data([0xFF, 0xD8, 0xFF, 0xE0]) + Data(text.utf8)
    }

    /// Lets one held call finish.
    public func letOneThrough() { gate?.signal() }

    public func compress(
        _ source: SourceImage, variants: [VariantSpec], limits: CompressionLimits, memory: WorkingMemory
    ) throws(ImagePipeError) -> CompressedImage {
        state.withLock { state in
            state.calls.append(source.name)
            state.concurrent += 1
            state.maxConcurrent = max(state.maxConcurrent, state.concurrent)
        }
        defer { state.withLock { $0.concurrent -= 1 } }
        let start = ContinuousClock.now
        if work > .zero { Thread.sleep(forTimeInterval: Double(work.milliseconds) / 1000) }
        gate?.wait()
        if let error = failure?(source.name) { throw error }
        let outputs = variants.map { variant in
            EncodedVariant(
                spec: variant, size: ResizePlan.outputSize(source: size, variant: variant),
                data: TrackedData.make(Data("\(source.name):\(variant.name)".utf8), owner: self))
        }
        var image = CompressedImage(sourceFormat: .jpeg, sourceSize: size, variants: outputs, decodeTime: work, encodeTime: .zero)
        // Steps as a real compressor reports them: a decode, then each variant's encode.
        let decoded = ContinuousClock.now
        image.steps =
            [ImageStep(.decode, from: start, to: decoded)] + variants.indices.map { ImageStep(.encode(variant: $0), from: decoded, to: .now) }
        return image
    }

    /// Records the batch, then compresses each source as a call of its own would.
    public func compress(
        batch sources: [SourceImage], variants: [VariantSpec], limits: CompressionLimits, memory: WorkingMemory
    ) -> [Result<CompressedImage, ImagePipeError>] {
        state.withLock { $0.batches.append(sources.map(\.name)) }
        return sources.map { source in
            Result { () throws(ImagePipeError) in try compress(source, variants: variants, limits: limits, memory: memory) }
        }
    }

    /// The source names of each batch call, in call order.
    public var batches: [[String]] { state.withLock { $0.batches } }

    /// Counts the pipeline's calls when it goes idle.
    public func releaseMemory() {
        state.withLock { $0.releases += 1 }
    }

    /// How many times ``releaseMemory()`` was called.
    public var memoryReleases: Int { state.withLock { $0.releases } }

    /// Source names in call order.
    public var calls: [String] { state.withLock { $0.calls } }
    /// Calls running now (started and not yet returned).
    public var runningCalls: Int { state.withLock { $0.concurrent } }
    /// The most calls that ran at the same time.
    public var maxConcurrentCalls: Int { state.withLock { $0.maxConcurrent } }
    /// Encoded outputs currently alive (not yet released by storage and the pipeline).
    public var liveOutputs: Int { state.withLock { $0.live } }
    /// The most encoded outputs alive at once: a measure of what the pipeline holds in memory.
    public var maxLiveOutputs: Int { state.withLock { $0.maxLive } }

    fileprivate func retain() {
        state.withLock { state in
            state.live += 1
            state.maxLive = max(state.maxLive, state.live)
        }
    }

    fileprivate func release() {
        state.withLock { $0.live -= 1 }
    }
}

/// Output bytes whose lifetime is counted, the way real encoders' buffers occupy memory.
private enum TrackedData {
    /// Data keeps buffers of up to 14 bytes inline, copying them and freeing the original at once,
    /// which would hide how long outputs live; tracked outputs are padded past that.
    static let minimumCount = 64

    static func make(_ bytes: Data, owner: ScriptedCompressor) -> Data {
        let count = max(bytes.count, minimumCount)
        let pointer = UnsafeMutableRawPointer.allocate(byteCount: max(1, count), alignment: 1)
        pointer.initializeMemory(as: UInt8.self, repeating: 0x20, count: count)
        bytes.copyBytes(to: pointer.assumingMemoryBound(to: UInt8.self), count: bytes.count)
        owner.retain()
        return Data(
            bytesNoCopy: pointer, count: count,
            deallocator: .custom { pointer, _ in
                pointer.deallocate()
                owner.release()
            })
    }
}
