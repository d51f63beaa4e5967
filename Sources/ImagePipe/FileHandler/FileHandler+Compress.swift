// Stage 2 of a job (CPU): decode the source once and encode every output.
import Foundation

extension FileHandler {
    /// Decodes and encodes an inspected job, drawing its working memory from `memory`; a failure
    /// ends the job.
    public func compress(_ context: inout JobContext, memory: WorkingMemory = .unlimited) {
        guard let image = compressionSource(&context) else { return }
        let start = ContinuousClock.now
        compressed(&context, compressOne(image, memory: memory), since: start)
    }

    private func compressOne(_ image: SourceImage, memory: WorkingMemory) -> Result<CompressedImage, ImagePipeError> {
        Result { () throws(ImagePipeError) in
            try compressor.compress(image, variants: configuration.variants, limits: configuration.limits, memory: memory)
        }
    }

    /// Compresses several inspected jobs in one call of the compressor (see
    /// ``ImageCompressor/batching``), each as ``compress(_:memory:)`` would: a job's failure is its own.
    public func compress(batch contexts: inout [JobContext], memory: WorkingMemory = .unlimited, session: (any CompressionSession)? = nil) {
        var images: [SourceImage] = []
        var indices: [Int] = []
        for index in contexts.indices {
            guard let image = compressionSource(&contexts[index]) else { continue }
            images.append(image)
            indices.append(index)
        }
        guard !images.isEmpty else { return }
        let start = ContinuousClock.now
        // Jobs that ended before it may leave one: compressed as one, unless a session is open for
        // the lane's batches.
        let outcomes =
            images.count == 1 && session == nil
            ? [compressOne(images[0], memory: memory)]
            : compressor.compress(
                batch: images, variants: configuration.variants, limits: configuration.limits, memory: memory, session: session)
        for (position, index) in indices.enumerated() {
            // A compressor that answered for fewer sources than it was given failed the rest.
            let outcome =
                position < outcomes.count ? outcomes[position] : .failure(ImagePipeError(.encodeFailed, "the compressor gave no result for it"))
            compressed(&contexts[index], outcome, since: start, batch: images.count)
        }
    }

    /// Whether the pipeline may compress this inspected job together with others.
    public func isBatchable(_ context: JobContext) -> Bool {
        guard !context.hasEnded, let source = context.source else { return false }
        return compressor.batching.admits(source.content)
    }

    /// The source as the compressor takes it; nil when the job has ended (or ends here, unread).
    private func compressionSource(_ context: inout JobContext) -> SourceImage? {
        guard !context.hasEnded else { return nil }
        context.timings.queueMs += (ContinuousClock.now - context.inspectedAt).milliseconds
        guard let source = context.source, context.origin != nil else {
            context.failure = ImagePipeError(.unreadableSource, "the source was not read")
            return nil
        }
        // The job's own point (queued with it) wins over the one its object's metadata gives.
        return SourceImage(name: context.job.relativePath, content: source.content, focus: context.job.focus ?? source.focus)
    }

    /// Records what the compressor made of a job's source, or its failure; a traced job gains the
    /// compression's span and its steps' (one call's, `batch` sources in it, started at `start`).
    private func compressed(
        _ context: inout JobContext, _ outcome: Result<CompressedImage, ImagePipeError>, since start: ContinuousClock.Instant, batch: Int = 1
    ) {
        if context.trace != nil { traceCompression(&context, outcome, since: start, batch: batch) }
        guard let source = context.source, var origin = context.origin else { return }
        // The source's bytes (or its open descriptor) are not needed past this stage: a job whose
        // outputs wait for their round of fsyncs holds neither.
        defer { context.source?.content = .bytes(Data()) }
        // A file kept open was decoded after it was hashed: what was made, or the decoder's failure,
        // must be of the bytes the hash says (a file cut short under the decoder is not a broken image).
        if case .file(let opened) = source.content, opened.hasChanged {
            context.failure = OpenedFile.changedError
            return
        }
        let compressed: CompressedImage
        switch outcome {
        case .success(let made): compressed = made
        case .failure(let error):
            context.failure = error
            return
        }
        context.format = compressed.sourceFormat
        context.size = compressed.sourceSize
        context.placeholder = compressed.placeholder
        context.facts = compressed.facts
        context.gainMap = compressed.gainMap
        context.timings.decodeMs = compressed.decodeTime.milliseconds
        context.timings.encodeMs = compressed.encodeTime.milliseconds

        // Every output records the original too, so a re-run that skips it can still describe it.
        origin.image = Origin.Image(
            width: compressed.sourceSize.width, height: compressed.sourceSize.height, format: compressed.sourceFormat,
            placeholder: compressed.placeholder, facts: compressed.facts)
        for (index, encoded) in compressed.variants.enumerated() {
            made(&context.outputs[index], origin, encoded.encoding, encoded.data, encoded.spec.format.contentType)
        }
        if configuration.storeOriginal, let index = context.outputs.indices.last, context.outputs[index].spec == nil {
            do {
                made(
                    &context.outputs[index], origin, VariantEncoding(size: compressed.sourceSize), try Self.originalBody(source),
                    compressed.sourceFormat.mediaType)
            } catch {
                context.failure = error
            }
        }
    }

    /// The compression's span, and a child for each step the compressor reports: each step is
    /// held within the span (the time this worker waited for the answer), so a helper that says
    /// otherwise moves only its own steps, and only within its own call.
    private func traceCompression(
        _ context: inout JobContext, _ outcome: Result<CompressedImage, ImagePipeError>, since start: ContinuousClock.Instant, batch: Int
    ) {
        let end = ContinuousClock.now
        var attributes: [(String, Span.Value)] = []
        if batch > 1 { attributes.append(("imagepipe.batch_sources", .int(batch))) }
        var status = Span.Status.unset
        if case .failure(let error) = outcome {
            attributes.append(error.spanAttribute)
            status = error.spanStatus
        }
        guard let span = context.trace?.add("compress", from: start, to: end, attributes: attributes, status: status),
            case .success(let image) = outcome, let trace = context.trace
        else { return }
        let (low, high) = (WallClock.nanos(at: start), WallClock.nanos(at: end))
        let variants = configuration.variants
        var steps: [Span] = []
        for step in image.steps.prefix(ImageStep.limit(variants: variants.count)) {
            let name: String
            var stepAttributes: [(String, Span.Value)] = []
            switch step.name {
            case .header: name = "read header"
            case .decode: name = "decode"
            case .analyses: name = "analyses"
            case .encode(let index), .gainMap(let index):
                guard index < variants.count else { continue }
                let variant = variants[index]
                stepAttributes = [("imagepipe.variant", .string(variant.name)), ("imagepipe.format", .string(variant.format.rawValue))]
                if case .encode = step.name {
                    name = "encode"
                    if index < image.variants.count, let encodes = image.variants[index].encoding.encodes {
                        stepAttributes.append(("imagepipe.quality_search_encodes", .int(encodes)))
                    }
                } else {
                    name = "gain map"
                }
            }
            let stepStart = min(max(step.start, low), high)
            steps.append(
                Span(
                    name: name, traceID: trace.traceID, parent: span, start: stepStart, end: min(max(step.end, stepStart), high),
                    attributes: stepAttributes))
        }
        context.trace?.add(steps)
    }

    /// Adds an output's object, marked with its original and the policy its key's look-up allows.
    private func made(_ output: inout JobContext.Output, _ origin: Origin, _ encoding: VariantEncoding, _ body: Data, _ contentType: String) {
        var marked = origin
        marked.width = encoding.size.width
        marked.height = encoding.size.height
        marked.variant = output.fingerprint
        let policy: WritePolicy = output.existing == nil ? .create : output.wasInPlace(for: origin) ? .replaceSameOriginal : .replaceAny
        output.encoding = encoding
        output.object = StorageObject(
            key: output.key, body: body, contentType: contentType, cacheControl: configuration.cacheControl,
            origin: marked, policy: policy)
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
