// The compressor the worker uses: every call is a job for a sandboxed helper process.
import CSandbox
public import Foundation
public import ImagePipe
public import Logging

/// Compresses in image helper processes (see docs/design.md, "Trust boundaries").
///
/// The worker keeps everything that holds a secret or writes outside the job; a helper gets the
/// source as a descriptor (the open file, or a memory file holding downloaded bytes), the variants,
/// and working memory when it asks for it, and gives back each encoded variant as a memory file.
/// A helper that dies fails its job with `decoder_crashed`, one that runs past the time limit is
/// killed and fails it with `job_timeout`. Every job gets a helper of its own (see ``HelperPool``),
/// and every reply must name the job's nonce and hand back outputs that are what they claim to be.
public final class SandboxedCompressor: ImageCompressor {
    let pool: HelperPool
    /// How long one job's image work may take in its helper, not counting waits for working memory.
    public let jobTimeout: Duration

    /// A job's wall-clock cap, waits for working memory counted, as a multiple of ``jobTimeout``: a
    /// helper waiting for memory it asked for is off the time limit's clock, and jobs that each ask
    /// for the whole budget in turn could otherwise outlive it together.
    static let wallClockTimeouts = 3

    /// The error codes a helper may fail a job with: those of the image work. Anything else (a
    /// storage or queue code) would be a helper steering its worker, and is taken as misbehaviour.
    static let helperCodes: Set<ImagePipeError.Code> = [
        .emptyFile, .unsupportedFormat, .corruptImage, .imageTooLarge, .encodeFailed, .unreadableSource, .sourceChanged,
        .configuration,
    ]

    /// The working memory a job is handed with (a quarter of the budget at most): enough for a
    /// small image's whole compression, so that it needs no exchange for more.
    static let advance = 8 << 20

    /// The largest source file the worker reads whole, for the FileHandler's `inMemoryLimit`: one
    /// that fits in a message. A larger file stays open and goes to its helper as a descriptor, which
    /// reads it from the page cache; read whole, it would be copied into a memory file for the helper
    /// to map, faulting in every page twice (on the 21-photo `web` corpus, about 2,000 page faults
    /// and a few milliseconds of CPU an image).
    public static let sourcesReadWholeUpTo = HelperResult.inlineLimit

    /// The largest output a helper may hand back, and the file size limit it writes them under.
    public static let maxOutputBytes = 1 << 30

    /// Starts `helpers` image helpers with `settings` and waits until they are ready; `logo` is
    /// the watermark logo's bytes, which each helper is handed as it starts.
    ///
    /// - Throws: a `configuration` error naming the cause when a helper cannot start or cannot
    ///   apply its sandbox.
    public init(settings: HelperSettings, helpers: Int, logo: Data?, jobTimeout: Duration, logger: Logger) throws(ImagePipeError) {
        self.pool = HelperPool(
            settings: settings, size: helpers, logo: logo,
            environment: HelperSettings.environment(from: ProcessInfo.processInfo.environment), logger: logger)
        self.jobTimeout = jobTimeout
        try pool.start()
    }

    /// A compressor around a pool it does not start: for tests of the exchange with a helper they
    /// play themselves.
    init(pool: HelperPool, jobTimeout: Duration) {
        self.pool = pool
        self.jobTimeout = jobTimeout
    }

    public func compress(
        _ source: SourceImage, variants: [VariantSpec], limits: CompressionLimits, memory: WorkingMemory
    ) throws(ImagePipeError) -> CompressedImage {
        let reply = try run(.compress, source, variants: variants, limits: limits, memory: memory)
        guard case .compressed(let result, let outputs) = reply else { throw Self.unexpected }
        return CompressedImage(result, variants: variants, outputs: outputs)
    }

    public func readHeader(_ source: SourceImage, variants: [VariantSpec], limits: CompressionLimits) throws(ImagePipeError) -> SourceHeader? {
        let reply = try run(.readHeader, source, variants: variants, limits: limits, memory: .unlimited)
        guard case .header(let header) = reply else { throw Self.unexpected }
        return header
    }

    /// Nothing to give back: each helper ends with its job, and its memory with it.
    public func releaseMemory() {}

    enum Work { case compress, readHeader }

    enum Outcome {
        case compressed(HelperResult, [Data])
        case header(SourceHeader?)
    }

    /// A job's nonce: random, so that no helper can name a job it was not given.
    static func nonce() -> UInt64 {
        var generator = SystemRandomNumberGenerator()
        return generator.next()
    }

    static let unexpected = ImagePipeError(.decoderCrashed, "the image helper answered out of turn")

    /// A job that waited for working memory past its wall-clock cap before its helper had it.
    static let memoryWaitError = ImagePipeError(
        .jobTimeout, "the image work waited for working memory past its wall-clock cap (\(wallClockTimeouts) × --job-timeout)")

    /// One job in a helper: set up, hand over the source, grant memory as asked, take the answer.
    /// A helper found gone before it had the job (it died idle) is replaced and the job given to
    /// the new one, uncharged.
    private func run(
        _ work: Work, _ source: SourceImage, variants: [VariantSpec], limits: CompressionLimits, memory: WorkingMemory
    ) throws(ImagePipeError) -> Outcome {
        for tries in 1... {
            let outcome = try withHelper(memory: memory) { (helper, granted) throws(ImagePipeError) -> Outcome? in
                do throws(Failure) {
                    let outcome = try exchange(work, helper, source, variants: variants, limits: limits, memory: memory, granted: &granted)
                    pool.checkin(helper)
                    return outcome
                } catch {
                    switch error {
                    case .failed(let error):
                        pool.checkin(helper)
                        throw error
                    case .unusable:
                        retireUnusable(helper)
                        guard tries < 2 else {
                            throw ImagePipeError(.helperUnavailable, "no image helper took the job: two ended before it was handed over")
                        }
                        return nil
                    case .ended(let reason, let detail):
                        pool.retire(helper, reason: reason, source: source.name, detail: detail)
                        pool.checkinEnded()
                        throw Self.error(reason, helper: helper, source: source.name, detail: detail, timeout: jobTimeout)
                    }
                }
            }
            if let outcome { return outcome }
        }
        preconditionFailure("unreachable")
    }

    /// Runs `body` with a helper from the pool and the working memory granted to it, given back
    /// after; `body` checks the helper in or retires it.
    func withHelper<T>(memory: WorkingMemory, _ body: (HelperProcess, inout Int) throws(ImagePipeError) -> T) throws(ImagePipeError) -> T {
        let helper = try pool.checkout()
        var granted = 0
        defer { if granted > 0 { memory.release(granted) } }
        return try body(helper, &granted)
    }

    /// Retires a helper that was gone before it had the work: not the work's doing.
    func retireUnusable(_ helper: HelperProcess) {
        pool.retire(helper, reason: .crashed, source: nil)
        pool.checkinEnded()
    }

    /// How a job in a helper went wrong.
    enum Failure: Error {
        /// The helper failed the job and stays usable.
        case failed(ImagePipeError)
        /// The helper was gone before the job was handed over: not the job's doing.
        case unusable
        /// The helper is gone, or must go: why, and what was seen.
        case ended(HelperPool.RestartReason, String?)
    }

    /// The clocks of one job in its helper: the time limit on the helper's work, which counts down
    /// while the worker waits for an answer and restarts at each answer of a batch, and the job's
    /// wall-clock cap, which counts everything, waits for memory too, and how often it asked.
    struct Clock {
        /// What is left of the helper's time limit.
        var left: Duration
        /// When the job must be over, waits for memory counted.
        let deadline: ContinuousClock.Instant
        /// The needs for memory answered.
        var needs = 0

        init(jobTimeout: Duration) {
            left = jobTimeout
            deadline = ContinuousClock.now + jobTimeout * SandboxedCompressor.wallClockTimeouts
        }

        /// What is left of both: the helper's time and the wall clock.
        var remaining: Duration { min(left, deadline - ContinuousClock.now) }

        mutating func spent(since started: ContinuousClock.Instant) { left -= ContinuousClock.now - started }
    }

    func exchange(
        _ work: Work, _ helper: HelperProcess, _ source: SourceImage, variants: [VariantSpec], limits: CompressionLimits,
        memory: WorkingMemory, granted: inout Int
    ) throws(Failure) -> Outcome {
        // The time limit counts the helper's work, not the waits for memory the pipeline budgets; the
        // wall clock counts both.
        var clock = Clock(jobTimeout: jobTimeout)
        let nonce = Self.nonce()

        let handed = try sourceDescriptor(source)
        defer { if handed.owned, let descriptor = handed.descriptor { close(descriptor) } }
        try setUp(helper, variants: variants, limits: limits, clock: &clock)
        // An advance on the working memory: most small images need no more, and ask for nothing.
        let advance: Int
        if work == .compress, let limit = memory.limit {
            guard let taken = memory.acquire(min(Self.advance, limit / 4), before: clock.deadline) else {
                throw .failed(Self.memoryWaitError)
            }
            granted = taken
            advance = granted
        } else {
            advance = work == .compress ? Int.max : 0
        }
        let described = HelperSource(
            nonce: nonce, name: source.name, focus: source.focus, isFile: handed.isFile, inline: handed.inline, advance: advance)
        let request: HelperRequest = work == .compress ? .compress(described) : .readHeader(described)
        do {
            let started = ContinuousClock.now
            try helper.channel.send(request.encoded(), descriptors: handed.descriptor.map { [$0] } ?? [], timeout: clock.remaining)
            clock.spent(since: started)
        } catch {
            throw .unusable
        }

        while true {
            let (reply, message) = try nextReply(helper, clock: &clock)
            switch reply {
            case .need(nonce, let bytes) where work == .compress && message.descriptors.isEmpty:
                try grant(bytes, nonce: nonce, to: helper, from: memory, granted: &granted, clock: &clock)
            case .compressed(nonce, let result) where work == .compress:
                let outputs = try Self.take(
                    message.descriptors, for: result, variants: variants, limits: limits, sourceBytes: Self.byteCount(source))
                return .compressed(result, outputs)
            case .header(nonce, let header) where work == .readHeader && message.descriptors.isEmpty:
                return .header(header)
            case .failed(nonce, let error) where message.descriptors.isEmpty:
                guard Self.helperCodes.contains(error.code) else { throw .ended(.misbehaved, "a failure coded \(error.code)") }
                throw .failed(error)
            case .need(let other, _), .compressed(let other, _), .header(let other, _), .failed(let other, _):
                message.closeDescriptors()
                throw .ended(.misbehaved, other == nonce ? "a message out of turn" : "a reply naming another job")
            default:
                message.closeDescriptors()
                throw .ended(.misbehaved, "a message out of turn")
            }
        }
    }

    /// Sends the helper the variants and limits of its job, unless an earlier batch of its session did.
    func setUp(_ helper: HelperProcess, variants: [VariantSpec], limits: CompressionLimits, clock: inout Clock) throws(Failure) {
        if let setup = helper.setup, setup.variants == variants, setup.limits == limits { return }
        let started = ContinuousClock.now
        do {
            try helper.channel.send(HelperRequest.setup(variants: variants, limits: limits).encoded(), timeout: clock.remaining)
        } catch {
            throw .unusable
        }
        clock.spent(since: started)
        helper.setup = (variants, limits)
    }

    /// The helper's next message, read within the time left (which it counts down) and the job's
    /// wall clock.
    func nextReply(_ helper: HelperProcess, clock: inout Clock) throws(Failure) -> (HelperReply, ChannelMessage) {
        let started = ContinuousClock.now
        let message: ChannelMessage
        do {
            message = try helper.channel.receive(timeout: max(.zero, clock.remaining))
        } catch {
            switch error {
            case .timedOut: throw .ended(.timeout, nil)
            case .closed: throw .ended(.crashed, nil)
            case .failed(let number): throw .ended(.misbehaved, "a message that could not be read (\(String(cString: strerror(number))))")
            }
        }
        clock.spent(since: started)
        do {
            return (try HelperReply(decoding: message.bytes), message)
        } catch {
            message.closeDescriptors()
            throw .ended(.misbehaved, "a malformed message: \(error)")
        }
    }

    /// Answers a helper's need for working memory from the pipeline's budget, waiting for it no
    /// later than the job's wall-clock cap; a helper asks a bounded number of times.
    func grant(
        _ bytes: Int, nonce: UInt64, to helper: HelperProcess, from memory: WorkingMemory, granted: inout Int, clock: inout Clock
    ) throws(Failure) {
        clock.needs += 1
        guard clock.needs <= HelperServer.maxNeeds else {
            throw .ended(.misbehaved, "more than \(HelperServer.maxNeeds) requests for working memory")
        }
        // A compressor holds one reservation at a time (the direct JPEG path gives its own
        // back before the general path takes another): a new need replaces the last grant.
        if granted > 0 { memory.release(granted) }
        granted = 0
        guard let taken = memory.acquire(bytes, before: clock.deadline) else {
            throw .ended(.timeout, "waited for working memory past the job's wall-clock cap")
        }
        granted = taken
        do {
            let started = ContinuousClock.now
            try helper.channel.send(HelperRequest.grant(nonce: nonce, bytes: granted).encoded(), timeout: max(.zero, clock.remaining))
            clock.spent(since: started)
        } catch {
            throw error == .timedOut ? .ended(.timeout, nil) : .ended(.crashed, nil)
        }
    }

    static func byteCount(_ source: SourceImage) -> Int {
        switch source.content {
        case .bytes(let data): data.count
        case .file(let opened): opened.byteCount
        }
    }

    /// How a source goes to its helper: its open file, opened again through `/proc/self/fd` so the
    /// helper's reads move an offset of its own and its flags are its own; a small one's bytes inside
    /// the message; or a memory file holding its bytes.
    private func sourceDescriptor(_ source: SourceImage) throws(Failure) -> (descriptor: Int32?, isFile: Bool, owned: Bool, inline: [UInt8]?) {
        switch source.content {
        case .file(let opened):
            let again = open(opened.decoderPath, O_RDONLY | O_CLOEXEC)
            return again >= 0 ? (again, true, true, nil) : (opened.descriptor, true, false, nil)
        case .bytes(let data) where data.count <= HelperResult.inlineLimit:
            return (nil, false, false, [UInt8](data))
        case .bytes(let data):
            let memory = ips_memory_file("imagepipe-source")
            guard memory >= 0 else {
                throw .failed(ImagePipeError(.unreadableSource, "no memory file for the source: \(String(cString: strerror(errno)))"))
            }
            let written = data.withUnsafeBytes { ips_write_all(memory, $0.baseAddress, $0.count, 0) }
            guard written == 0 else {
                let reason = String(cString: strerror(errno))
                close(memory)
                throw .failed(ImagePipeError(.unreadableSource, "cannot hand the source over: \(reason)"))
            }
            return (memory, false, true, nil)
        }
    }
}
