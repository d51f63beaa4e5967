// The helper's side of the channel: one job at a time, from the worker's requests to its replies.
import CSandbox
public import Foundation
public import ImagePipe
import Synchronization

/// Serves a worker's image jobs in a helper process, on the channel it was started with.
public enum HelperServer {
    /// The channel's descriptor in a helper (see `ips_spawn`).
    public static let channelDescriptor: Int32 = 3

    /// Tells the worker the helper cannot start (its sandbox failed), then ends.
    public static func refuseToStart(_ reason: String) -> Never {
        refuse(reason, on: HelperChannel(taking: channelDescriptor))
    }

    private static func refuse(_ reason: String, on channel: HelperChannel) -> Never {
        try? channel.send(HelperReply.startFailed(reason).encoded(), timeout: .seconds(5))
        _exit(3)
    }

    /// A memory file's whole content, read; empty when it cannot be.
    private static func readAll(_ descriptor: Int32) -> Data {
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_size > 0 else { return Data() }
        var data = Data(count: Int(status.st_size))
        let got = data.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
        return got == data.count ? data : Data()
    }

    /// Takes the worker's first message (the watermark logo's bytes, if any), makes the compressor
    /// with them, says the helper is ready, and serves one job (or one batch), then ends; it ends
    /// sooner when the worker closes the channel or dies.
    public static func serve(
        sandboxed: Bool, landlock: Int, makeCompressor: (_ logo: Data?) throws(ImagePipeError) -> any ImageCompressor
    ) -> Never {
        let channel = HelperChannel(taking: channelDescriptor)
        do {
            let first = try channel.receive()
            guard case .start(let hasLogo) = try? HelperRequest(decoding: first.bytes), first.descriptors.count == (hasLogo ? 1 : 0) else {
                first.closeDescriptors()
                refuse("the worker's first message was not a start", on: channel)
            }
            let logo = hasLogo ? readAll(first.descriptors[0]) : nil
            let compressor: any ImageCompressor
            do throws(ImagePipeError) {
                compressor = try makeCompressor(logo)
            } catch {
                refuse(error.reason, on: channel)
            }
            try channel.send(HelperReply.ready(sandboxed: sandboxed, landlock: landlock).encoded())
            var setup: (variants: [VariantSpec], limits: CompressionLimits) = ([], .default)
            var batches = 0
            while true {
                let message = try channel.receive()
                let request: HelperRequest
                do {
                    request = try HelperRequest(decoding: message.bytes)
                } catch {
                    message.closeDescriptors()
                    FileHandle.standardError.write(Data("image helper: a malformed request (\(error)); ending\n".utf8))
                    _exit(4)
                }
                switch request {
                case .setup(let variants, let limits):
                    message.closeDescriptors()
                    setup = (variants, limits)
                case .compress(let described), .readHeader(let described):
                    // A source comes as one descriptor, or (a small one) inside the message; never
                    // to a helper that served a batch.
                    guard batches == 0, message.descriptors.count == (described.inline == nil ? 1 : 0) else {
                        message.closeDescriptors()
                        _exit(4)
                    }
                    let reply = job(request, described, message.descriptors.first, setup: setup, compressor: compressor, channel: channel)
                    try send(reply, nonce: described.nonce, on: channel)
                    // A helper's life is one job: the worker gives it no other, and it takes none.
                    _exit(0)
                case .compressBatch(let sources):
                    guard message.descriptors.isEmpty else {
                        message.closeDescriptors()
                        _exit(4)
                    }
                    // A helper's life is one batch, which its worker may hand over in several
                    // messages as its small jobs come; it serves none after a failure.
                    batches += 1
                    guard try serve(batch: sources, setup: setup, compressor: compressor, channel: channel) else { _exit(0) }
                case .grant, .start:
                    // A grant answers a need: one out of turn means the two sides disagree.
                    message.closeDescriptors()
                    _exit(4)
                }
            }
        } catch {
            // The worker closed the channel or died: nothing is left to do, nor to flush. Every
            // end of a helper is without exit handlers (`_exit`): a sanitizer's leak check at exit
            // needs ptrace and wait4, which the sandbox refuses, and would only report that (a
            // helper that `exit`ed while waiting for a grant made the sanitized batch test fail).
            _exit(0)
        }
    }

    private enum Reply {
        case compressed(CompressedImage)
        case header(SourceHeader?)
        case failed(ImagePipeError)
    }

    /// The most times one job may ask for working memory: a compression asks once or twice (the
    /// direct JPEG path, then the general one); the worker refuses a helper that asks more.
    static let maxNeeds = 8

    private static func job(
        _ request: HelperRequest, _ described: HelperSource, _ descriptor: Int32?, setup: (variants: [VariantSpec], limits: CompressionLimits),
        compressor: any ImageCompressor, channel: HelperChannel
    ) -> Reply {
        let content: SourceImage.Content
        if let inline = described.inline {
            content = .bytes(Data(inline))
        } else if let descriptor, described.isFile {
            guard let opened = OpenedFile(adopting: descriptor) else {
                return .failed(ImagePipeError(.unreadableSource, "the source handed over is no regular file"))
            }
            content = .file(opened)
        } else if let descriptor {
            guard let bytes = mapped(descriptor) else {
                return .failed(ImagePipeError(.unreadableSource, "the source's bytes could not be mapped: \(String(cString: strerror(errno)))"))
            }
            content = .bytes(bytes)
        } else {
            return .failed(ImagePipeError(.unreadableSource, "no source came with the job"))
        }
        let source = SourceImage(name: described.name, content: content, focus: described.focus)
        // Working memory comes from the worker's budget. The job came with an advance; a need it
        // covers is taken from it, a larger one asked for (and waited for), replacing it. Both the
        // need and the grant name the job.
        let held = Mutex(described.advance)
        let nonce = described.nonce
        let memory = WorkingMemory(asking: { bytes in
            if bytes <= held.withLock({ $0 }) { return bytes }
            do {
                try channel.send(HelperReply.need(nonce: nonce, bytes: bytes).encoded())
                let message = try channel.receive()
                message.closeDescriptors()
                guard case .grant(nonce, let granted) = try HelperRequest(decoding: message.bytes) else { _exit(4) }
                held.withLock { $0 = granted }
                return granted
            } catch {
                _exit(0)
            }
        })
        do throws(ImagePipeError) {
            if case .readHeader = request {
                return .header(try compressor.readHeader(source, variants: setup.variants, limits: setup.limits))
            }
            return .compressed(try compressor.compress(source, variants: setup.variants, limits: setup.limits, memory: memory))
        } catch {
            return .failed(error)
        }
    }

    private static func send(_ reply: Reply, nonce: UInt64, on channel: HelperChannel) throws(ChannelFailure) {
        switch reply {
        case .header(let header):
            try channel.send(HelperReply.header(nonce: nonce, header).encoded())
        case .failed(let error):
            try channel.send(HelperReply.failed(nonce: nonce, error).encoded())
        case .compressed(let compressed):
            let result = HelperResult(compressed)
            var files: [Int32] = []
            defer { for file in files { close(file) } }
            if let error = outputFiles(compressed, result, into: &files) {
                return try channel.send(HelperReply.failed(nonce: nonce, error).encoded())
            }
            try channel.send(HelperReply.compressed(nonce: nonce, result).encoded(), descriptors: files)
        }
    }

    /// Writes each output the result does not hold inside into a memory file of its own, appended
    /// to `files` in order; the error when one cannot be.
    private static func outputFiles(_ compressed: CompressedImage, _ result: HelperResult, into files: inout [Int32]) -> ImagePipeError? {
        for (variant, described) in zip(compressed.variants, result.variants) where described.inline == nil {
            let file = ips_memory_file("imagepipe-output")
            guard file >= 0 else { return ImagePipeError(.encodeFailed, "no memory file for an output: \(String(cString: strerror(errno)))") }
            files.append(file)
            let written = variant.data.withUnsafeBytes { ips_write_all(file, $0.baseAddress, $0.count, 0) }
            guard written == 0 else { return ImagePipeError(.encodeFailed, "cannot hand an output over: \(String(cString: strerror(errno)))") }
        }
        return nil
    }

    /// The most bytes of outputs one reply of a batch holds inside it, and so the most a batch's
    /// sources hold in all: well within the socket's default send buffer (208 KiB), which bounds a message.
    static let batchMessageBytes = 160 << 10

    /// How long a batch's results are held back at most before they are sent.
    static let answerAtLeastEvery: Duration = .seconds(1)

    /// Serves a batch: each source in turn, the results sent in as few messages as the bounds on a
    /// message allow (one, for small images), and nothing after the first failure, which ends it.
    /// Whether every source was made (a helper serves nothing after a failure).
    private static func serve(
        batch sources: [HelperSource], setup: (variants: [VariantSpec], limits: CompressionLimits), compressor: any ImageCompressor,
        channel: HelperChannel
    ) throws(ChannelFailure) -> Bool {
        var items: [HelperBatchItem] = []
        var files: [Int32] = []
        var inside = 0
        var flushed = ContinuousClock.now
        func flush() throws(ChannelFailure) {
            defer {
                for file in files { close(file) }
                files.removeAll()
                items.removeAll()
                inside = 0
                flushed = ContinuousClock.now
            }
            try channel.send(HelperReply.batch(items).encoded(), descriptors: files)
        }
        for described in sources {
            let compressed: CompressedImage
            switch job(.compress(described), described, nil, setup: setup, compressor: compressor, channel: channel) {
            case .compressed(let made): compressed = made
            case .failed(let error):
                items.append(.failed(nonce: described.nonce, error))
                try flush()
                return false
            case .header: _exit(4)
            }
            let inline = HelperResult.fitsInline(compressed)
            let result = HelperResult(compressed, inline: inline)
            // What the result takes in the message: its outputs inside, and its description (a
            // generous bound on its numbers, placeholder and names).
            let cost = (inline ? compressed.variants.reduce(0) { $0 + $1.data.count } : 0) + 512 + 128 * result.variants.count
            if !items.isEmpty, inside + cost > batchMessageBytes || files.count + result.files > HelperChannel.maxDescriptors {
                try flush()
            }
            var made: [Int32] = []
            if let error = outputFiles(compressed, result, into: &made) {
                for file in made { close(file) }
                items.append(.failed(nonce: described.nonce, error))
                try flush()
                return false
            }
            files += made
            inside += cost
            items.append(.compressed(nonce: described.nonce, result))
            // The worker's time limit counts afresh at each answer: a batch that has run a while
            // says what it made so far, so a slow image later in it never times out the ones before.
            if ContinuousClock.now - flushed >= Self.answerAtLeastEvery { try flush() }
        }
        if !items.isEmpty { try flush() }
        return true
    }

    /// A memory file's bytes, mapped without a copy and unmapped when the job lets them go; nil
    /// when it cannot be (an empty file maps to no bytes).
    private static func mapped(_ descriptor: Int32) -> Data? {
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { return nil }
        guard status.st_size > 0 else { return Data() }
        let count = Int(status.st_size)
        guard let address = mmap(nil, count, PROT_READ, MAP_PRIVATE, descriptor, 0), address != MAP_FAILED else { return nil }
        return Data(bytesNoCopy: address, count: count, deallocator: .custom { pointer, count in munmap(pointer, count) })
    }
}
