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
/// killed and fails it with `job_timeout`; the next job gets a new helper.
public final class SandboxedCompressor: ImageCompressor {
    let pool: HelperPool
    /// How long one job's image work may take in its helper, not counting waits for working memory.
    public let jobTimeout: Duration

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

    public func releaseMemory() { pool.trimIdle() }

    private enum Work { case compress, readHeader }

    private enum Outcome {
        case compressed(HelperResult, [Data])
        case header(SourceHeader?)
    }

    static let unexpected = ImagePipeError(.decoderCrashed, "the image helper answered out of turn")

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
                    pool.checkin(helper, jobFailed: false)
                    return outcome
                } catch {
                    switch error {
                    case .failed(let error):
                        pool.checkin(helper, jobFailed: true)
                        throw error
                    case .unusable:
                        retireUnusable(helper)
                        guard tries < 2 else {
                            throw ImagePipeError(.helperUnavailable, "no image helper took the job: two ended before it was handed over")
                        }
                        return nil
                    case .ended(let reason, let detail):
                        pool.retire(helper, reason: reason, source: source.name)
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

    private func exchange(
        _ work: Work, _ helper: HelperProcess, _ source: SourceImage, variants: [VariantSpec], limits: CompressionLimits,
        memory: WorkingMemory, granted: inout Int
    ) throws(Failure) -> Outcome {
        // The time limit counts the helper's work, not the waits for memory the pipeline budgets.
        var left = jobTimeout
        func elapsed(since started: ContinuousClock.Instant) { left -= ContinuousClock.now - started }

        let handed = try sourceDescriptor(source)
        defer { if handed.owned, let descriptor = handed.descriptor { close(descriptor) } }
        try setUp(helper, variants: variants, limits: limits, left: &left)
        // An advance on the working memory: most small images need no more, and ask for nothing.
        let advance: Int
        if work == .compress, let limit = memory.limit {
            granted = memory.acquire(min(Self.advance, limit / 4))
            advance = granted
        } else {
            advance = work == .compress ? Int.max : 0
        }
        let described = HelperSource(name: source.name, focus: source.focus, isFile: handed.isFile, inline: handed.inline, advance: advance)
        let request: HelperRequest = work == .compress ? .compress(described) : .readHeader(described)
        do {
            let started = ContinuousClock.now
            try helper.channel.send(request.encoded(), descriptors: handed.descriptor.map { [$0] } ?? [], timeout: left)
            elapsed(since: started)
        } catch {
            throw .unusable
        }

        while true {
            let (reply, message) = try nextReply(helper, left: &left)
            switch reply {
            case .need(let bytes) where work == .compress && message.descriptors.isEmpty:
                try grant(bytes, to: helper, from: memory, granted: &granted, left: &left)
            case .compressed(let result) where work == .compress:
                let outputs = try Self.take(
                    message.descriptors, for: result, variants: variants, limits: limits, sourceBytes: Self.byteCount(source))
                return .compressed(result, outputs)
            case .header(let header) where work == .readHeader && message.descriptors.isEmpty:
                return .header(header)
            case .failed(let error) where message.descriptors.isEmpty:
                guard Self.helperCodes.contains(error.code) else { throw .ended(.misbehaved, "a failure coded \(error.code)") }
                throw .failed(error)
            default:
                message.closeDescriptors()
                throw .ended(.misbehaved, "a message out of turn")
            }
        }
    }

    /// Sends the helper the variants and limits when they are not those it has.
    func setUp(_ helper: HelperProcess, variants: [VariantSpec], limits: CompressionLimits, left: inout Duration) throws(Failure) {
        guard helper.setup == nil || helper.setup!.variants != variants || helper.setup!.limits != limits else { return }
        let started = ContinuousClock.now
        do {
            try helper.channel.send(HelperRequest.setup(variants: variants, limits: limits).encoded(), timeout: left)
        } catch {
            throw .unusable
        }
        left -= ContinuousClock.now - started
        helper.setup = (variants, limits)
    }

    /// The helper's next message, read within the time left (which it counts down).
    func nextReply(_ helper: HelperProcess, left: inout Duration) throws(Failure) -> (HelperReply, ChannelMessage) {
        let started = ContinuousClock.now
        let message: ChannelMessage
        do {
            message = try helper.channel.receive(timeout: left)
        } catch {
            switch error {
            case .timedOut: throw .ended(.timeout, nil)
            case .closed: throw .ended(.crashed, nil)
            case .failed(let number): throw .ended(.misbehaved, "a message that could not be read (\(String(cString: strerror(number))))")
            }
        }
        left -= ContinuousClock.now - started
        do {
            return (try HelperReply(decoding: message.bytes), message)
        } catch {
            message.closeDescriptors()
            throw .ended(.misbehaved, "a malformed message: \(error)")
        }
    }

    /// Answers a helper's need for working memory from the pipeline's budget.
    func grant(_ bytes: Int, to helper: HelperProcess, from memory: WorkingMemory, granted: inout Int, left: inout Duration) throws(Failure) {
        // A compressor holds one reservation at a time (the direct JPEG path gives its own
        // back before the general path takes another): a new need replaces the last grant.
        if granted > 0 { memory.release(granted) }
        granted = 0
        granted = memory.acquire(bytes)
        do {
            let started = ContinuousClock.now
            try helper.channel.send(HelperRequest.grant(granted).encoded(), timeout: left)
            left -= ContinuousClock.now - started
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

    /// The most bytes one variant's output may hold: what its box can hold at 4 bytes a pixel (every
    /// frame of an animation; a JPEG that may carry a gain map a byte more, for the map at up to its
    /// full size), or the source's own size (a kept original), and a mebibyte for containers and
    /// metadata, never over ``maxOutputBytes``. A helper that says more is lying.
    static func outputLimit(for variant: VariantSpec, limits: CompressionLimits, sourceBytes: Int) -> Int {
        let open = variant.width == VariantSpec.unbounded || variant.height == VariantSpec.unbounded
        let pixels = open ? limits.maxPixels : min(limits.maxPixels, variant.width.multipliedReportingOverflow(by: variant.height).partialValue)
        let frames = variant.format.holdsAnimation ? limits.maxFrames : 1
        let perPixel = variant.carriesHDR ? 5 : 4
        let (drawn, overflow) = (max(0, pixels) * perPixel).multipliedReportingOverflow(by: max(1, frames))
        return min(maxOutputBytes, max(sourceBytes, overflow ? maxOutputBytes : drawn) + (1 << 20))
    }

    /// Reads each variant's memory file, checked against what the helper said of it and what the
    /// variant can hold, and closes them all.
    static func take(
        _ descriptors: [Int32], for result: HelperResult, variants: [VariantSpec], limits: CompressionLimits, sourceBytes: Int
    ) throws(Failure) -> [Data] {
        defer { for descriptor in descriptors { close(descriptor) } }
        // Small outputs come inside the message, the others each as a memory file, in order.
        let filed = result.variants.filter { $0.inline == nil }.count
        guard result.variants.count == variants.count, descriptors.count == filed else {
            throw .ended(.misbehaved, "\(descriptors.count) output files for \(filed) of \(variants.count) variants")
        }
        for (variant, made) in zip(variants, result.variants)
        where made.byteCount > outputLimit(for: variant, limits: limits, sourceBytes: sourceBytes) {
            throw .ended(.misbehaved, "an output of \(made.byteCount) bytes for the variant \(variant.name)")
        }
        for (variant, made) in zip(variants, result.variants) where made.encoding.hdrHeadroom != nil && !variant.carriesHDR {
            throw .ended(.misbehaved, "an HDR output for the variant \(variant.name), which carries no gain map")
        }
        var outputs: [Data] = []
        outputs.reserveCapacity(variants.count)
        var files = descriptors.makeIterator()
        for variant in result.variants {
            if let inline = variant.inline {
                outputs.append(Data(inline))
                continue
            }
            guard let descriptor = files.next() else { throw .ended(.misbehaved, "an output file missing") }
            var status = stat()
            guard fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG, Int(status.st_size) == variant.byteCount
            else { throw .ended(.misbehaved, "an output that is not the size it was said to be") }
            // Read, not mapped: a helper that shrank its file later would make a mapping kill the worker (SIGBUS).
            var data = Data(count: variant.byteCount)
            let complete = data.withUnsafeMutableBytes { buffer in
                var got = 0
                while got < buffer.count {
                    let n = pread(descriptor, buffer.baseAddress! + got, buffer.count - got, off_t(got))
                    if n < 0, errno == EINTR { continue }
                    if n <= 0 { return false }
                    got += n
                }
                return true
            }
            guard complete else { throw .ended(.misbehaved, "an output that could not be read whole") }
            outputs.append(data)
        }
        return outputs
    }

    /// The job's error for a helper that ended: crashed (with its signal), timed out, or misbehaved.
    static func error(
        _ reason: HelperPool.RestartReason, helper: HelperProcess, source: String, detail: String?, timeout: Duration
    ) -> ImagePipeError {
        switch reason {
        case .timeout:
            return ImagePipeError(
                .jobTimeout, "the image work on '\(source)' ran past --job-timeout (\(timeout.formattedSeconds)): its helper was killed")
        case .crashed, .recycled:
            return ImagePipeError(
                .decoderCrashed, "the image helper crashed on '\(source)': \(HelperProcess.describe(helper.killAndReap()))")
        case .misbehaved:
            return ImagePipeError(
                .decoderCrashed, "the image helper working on '\(source)' sent \(detail ?? "what it must not") and was killed")
        }
    }
}

extension CompressedImage {
    /// A helper's result with the variants' bytes it handed over and the specs they were made for.
    init(_ result: HelperResult, variants specs: [VariantSpec], outputs: [Data]) {
        let encoded = zip(specs, zip(result.variants, outputs)).map { spec, made in
            var variant = EncodedVariant(spec: spec, size: made.0.encoding.size, data: made.1)
            variant.encoding = made.0.encoding
            return variant
        }
        self.init(
            sourceFormat: result.sourceFormat, sourceSize: result.sourceSize, variants: encoded, decodeTime: result.decodeTime,
            encodeTime: result.encodeTime)
        placeholder = result.placeholder
        gainMap = result.gainMap
    }
}
