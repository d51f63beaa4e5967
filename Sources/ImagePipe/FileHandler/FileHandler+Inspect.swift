// Stage 1 of a job (blocking I/O): read and hash the source, name its outputs, and look each one up in the destination.
import Dispatch
import Foundation
import Synchronization
import Logging

extension FileHandler {
    /// Reads and hashes the source, builds every output key (checked against the destination's key
    /// limits) and looks each up in the destination.
    ///
    /// The job ends here `skipped` (`not_an_image`) when the source's first bytes are no image's
    /// and its name does not say it is one (``ImageSignature``: nothing more of it is read), and
    /// `skipped` (`up_to_date`) when every output exists from this original with
    /// the same settings and ``Configuration/force`` is off; `failed` when a key holds another
    /// original's output (`key_collision`, unless ``Configuration/overwrite``, or for an earlier
    /// version of the same name as ``Configuration/replaces(earlierVersion:of:)`` allows), when the
    /// source cannot be read or when the destination cannot be asked.
    ///
    /// - Parameter reserving: whether to reserve the keys against other jobs of this process (off
    ///   for a dry run, which writes nothing).
    public func inspect(_ context: inout JobContext, reserving: Bool = true) {
        let clock = ContinuousClock()
        let start = clock.now
        context.timings.queueMs = (start - context.acceptedAt).milliseconds
        do throws(ImagePipeError) {
            try inspectSource(&context, reserving: reserving, since: start)
        } catch {
            releaseKeys(&context)
            context.failure = error
        }
        context.inspectedAt = clock.now
        if !context.hasEnded, !configuration.force, let origin = context.origin,
            context.outputs.allSatisfy({ $0.isInPlace(for: origin) })
        {
            releaseKeys(&context)
            context.skip = (.upToDate, "every output is in place from this original")
        }
    }

    private func inspectSource(_ context: inout JobContext, reserving: Bool, since start: ContinuousClock.Instant) throws(ImagePipeError) {
        let clock = ContinuousClock()
        let job = context.job
        let source: SourceFile
        let outcome: SourceReader.Outcome
        do {
            outcome = try readSource(job)
        } catch {
            // A traced job shows where it failed: the read's span carries the error.
            context.trace?.add(
                Self.readSpanName(job), from: start, to: clock.now, attributes: [error.spanAttribute], status: error.spanStatus)
            throw error
        }
        switch outcome {
        case .image(let file):
            source = file
            if let clash = job.keyCollision { throw clash }
        case .notAnImage(let reason):
            let read = clock.now
            context.timings.readMs = (read - start).milliseconds
            context.trace?.add(Self.readSpanName(job), from: start, to: read, attributes: [("imagepipe.skip_code", .string("not_an_image"))])
            context.skip = (.notAnImage, reason)
            return
        }
        context.source = source
        let origin = Origin(sha256: source.sha256, source: job.sourceName, location: job.location)
        context.origin = origin
        let read = clock.now
        context.timings.readMs = (read - start).milliseconds
        context.trace?.add(Self.readSpanName(job), from: start, to: read, attributes: [("imagepipe.bytes_in", .int(source.byteCount))])

        context.outputs = try outputKeys(job, source).map { JobContext.Output(spec: $0.spec, key: $0.key) }
        if Self.frameCount(of: source) > 1 {
            let focus = job.focus ?? source.focus
            for index in context.outputs.indices {
                context.outputs[index].animated = context.outputs[index].spec?.animates(focus: focus) ?? false
            }
        }
        if context.outputs.contains(where: { $0.spec?.carriesHDR == true }), Self.announcesGainMap(source) {
            for index in context.outputs.indices { context.outputs[index].hdr = context.outputs[index].spec?.carriesHDR ?? false }
        }
        let keys = context.outputs.map(\.key)
        if reserving {
            if let clash = reservations.reserve(keys, for: origin) {
                throw .keyCollision(key: clash.key, source: job.sourceName, existing: clash.holder)
            }
            context.reservedKeys = keys
        }

        let checkStart = clock.now
        do {
            try checkDestination(&context, keys: keys, origin: origin, reserving: reserving)
        } catch {
            context.trace?.add(
                "check destination", from: checkStart, to: clock.now, attributes: [error.spanAttribute], status: error.spanStatus)
            throw error
        }
        let checked = clock.now
        context.timings.checkMs = (checked - checkStart).milliseconds
        context.trace?.add("check destination", from: checkStart, to: checked, attributes: [("imagepipe.keys", .int(keys.count))])
    }

    /// Looks every output's key up in the destination: what it holds there, and whether this job may write it.
    private func checkDestination(_ context: inout JobContext, keys: [String], origin: Origin, reserving: Bool) throws(ImagePipeError) {
        let job = context.job
        let found = lookUp(keys)
        for index in context.outputs.indices {
            let key = context.outputs[index].key
            let existing = try found[index].mapError { $0.prefixed("checking \(key)") }.get()
            context.outputs[index].existing = existing
            guard let existing, !origin.isSameOriginal(as: existing.origin) else { continue }
            let changed = existing.origin?.source == job.sourceName
            guard changed ? configuration.replaces(earlierVersion: existing, of: origin) : configuration.overwrite else {
                throw .keyCollision(
                    key: key, source: job.sourceName, existing: existing.origin, location: origin.location, cacheControl: existing.cacheControl)
            }
            // A dry run (nothing reserved) replaces nothing.
            if reserving {
                logReplacement(of: existing, at: key, changed: changed, source: job.sourceName)
            }
        }
    }

    /// A local file is read, an object downloaded.
    private static func readSpanName(_ job: Job) -> String { job.object == nil ? "read source" : "download source" }

    /// Logs that the output under `key` is about to be replaced, and warns when it was served as
    /// immutable: the new picture then reaches only those whose caches never held the old one.
    private func logReplacement(of existing: ExistingObject, at key: String, changed: Bool, source: String) {
        var metadata: Logger.Metadata = [
            "key": "\(key)", "source": "\(source)", "previous_source": "\(existing.origin?.source ?? "unknown")",
        ]
        let message: Logger.Message = changed ? "replacing an output of a changed original" : "replacing an output made from another original"
        logger.notice(message, metadata: metadata)
        guard existing.wasServedImmutable else { return }
        metadata["cache_control"] = "\(existing.cacheControl ?? "")"
        logger.warning(
            """
            replacing '\(key)', which was served as immutable: browsers and CDNs may keep showing the old picture \
            \(CacheControl.lifetimeText(existing.cacheControl)); key outputs by content ({hash}) to publish new pictures under new URLs
            """,
            metadata: metadata)
    }

    /// Looks every key up at once: against an object store each look-up is a round trip, and a
    /// re-run that finds everything in place is made of little else.
    private func lookUp(_ keys: [String]) -> [Result<ExistingObject?, ImagePipeError>] {
        guard keys.count > 1 else { return keys.map { key in Result { () throws(ImagePipeError) in try storage.existing(key) } } }
        let results = Mutex([Result<ExistingObject?, ImagePipeError>](repeating: .success(nil), count: keys.count))
        DispatchQueue.concurrentPerform(iterations: keys.count) { index in
            let result = Result { () throws(ImagePipeError) in try storage.existing(keys[index]) }
            results.withLock { $0[index] = result }
        }
        return results.withLock { $0 }
    }

    /// Every output's key: the variants in order, then the original through the same template as
    /// variant `original` with the original's own extension.
    func outputKeys(_ job: Job, _ source: SourceFile) throws(ImagePipeError) -> [(spec: VariantSpec?, key: String)] {
        let values = KeyTemplate.Values(relativePath: job.relativePath, sha256: source.sha256)
        var keys: [(spec: VariantSpec?, key: String)] = []
        for variant in configuration.variants {
            keys.append((variant, try configuration.keyTemplate.key(for: values, variant: variant.name, ext: variant.format.fileExtension)))
        }
        if configuration.storeOriginal {
            // The name's extension when it is an image's (a `.jpeg` stays one), else the signature's:
            // an upload named `3f2a9c1e` or `upload.dat` is stored as what it is.
            let ext =
                ImageSignature.imageExtensions.contains(values.sourceExtension)
                ? values.sourceExtension : (Self.signatureExtension(of: source) ?? "bin")
            keys.append((nil, try configuration.keyTemplate.key(for: values, variant: Self.originalVariantName, ext: ext)))
        }
        for (_, key) in keys { try storage.keyLimits.check(key) }
        return keys
    }

    /// The extension the source's first bytes call for; nil when unknown.
    static func signatureExtension(of source: SourceFile) -> String? {
        switch source.content {
        case .bytes(let data): ImageSignature.fileExtension(of: data.prefix(ImageSignature.headLength))
        case .file(let opened): (try? opened.read(count: ImageSignature.headLength)).flatMap { ImageSignature.fileExtension(of: $0) }
        }
    }

    /// The frames the source's container declares (``FrameCount``). GIF and WebP sources are held in
    /// memory; one kept open is read for it only when its first bytes are a GIF's or a WebP's.
    static func frameCount(of source: SourceFile) -> Int {
        switch source.content {
        case .bytes(let data):
            return FrameCount.of(data)
        case .file(let opened):
            guard let head = try? opened.read(count: ImageSignature.headLength), FrameCount.mayBeAnimated(head),
                let data = try? opened.readAll()
            else { return 1 }
            return FrameCount.of(data)
        }
    }

    /// Whether the source's container announces an HDR gain map a JPEG variant can carry
    /// (``GainMap/kind(in:)`` on its first bytes, as the compressor reads them): an Ultra HDR JPEG
    /// or an iPhone's HEIC. An ISO 21496-1 map in HEIF, which imagepipe does not read, is not foreseen.
    static func announcesGainMap(_ source: SourceFile) -> Bool {
        let start: Data?
        switch source.content {
        case .bytes(let data): start = data.prefix(GainMap.probedBytes)
        case .file(let opened): start = try? opened.read(count: min(opened.byteCount, GainMap.probedBytes))
        }
        guard let start, let kind = GainMap.kind(in: start) else { return false }
        return kind != .isoHEIF
    }

    /// Gives the job's reserved keys back.
    func releaseKeys(_ context: inout JobContext) {
        reservations.release(context.reservedKeys)
        context.reservedKeys = []
    }
}
