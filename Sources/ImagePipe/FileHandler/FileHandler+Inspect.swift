// Stage 1 of a job: read and hash the source, name its outputs, and look each one up in the destination.
import Dispatch
import Foundation
import Synchronization
import Logging

/// A job after its source was read and its outputs looked up: ready to compress, or already finished
/// (skipped because every output is in place, or failed before anything was decoded).
public struct InspectedJob: Sendable {
    /// What comes next.
    public enum Next: Sendable, Equatable {
        /// Decode and encode: some output is missing (or `--force`).
        case compress
        /// Nothing more to do; ``InspectedJob/finished`` is the result.
        case finished
    }

    /// One output and what the destination holds under its key now.
    public struct PlannedOutput: Sendable {
        /// The variant; nil for the stored original.
        public var spec: VariantSpec?
        /// Its key.
        public var key: String
        /// What is stored under the key before this job writes it.
        public var existing: ExistingObject?

        /// What the output's origin records as its variant: the spec, or `original`.
        public var fingerprint: String { spec?.specString ?? FileHandler.originalVariantName }

        /// Whether the key holds exactly this output: made from `origin`'s bytes with the same settings.
        public func isInPlace(for origin: Origin) -> Bool {
            origin.isSameOriginal(as: existing?.origin) && existing?.origin?.variant == fingerprint
        }
    }

    /// The job.
    public var job: Job
    /// When the pipeline accepted it.
    public var acceptedAt: ContinuousClock.Instant
    /// When inspection ended (waiting for a compression slot starts here).
    public var inspectedAt: ContinuousClock.Instant
    /// The source, once read.
    public var source: SourceFile?
    /// The original as recorded with every output, once read.
    public var origin: Origin?
    /// The outputs: every variant in order, then the original when it is stored too.
    public var outputs: [PlannedOutput] = []
    /// Keys reserved in this process for this job (released when it completes).
    public var reservedKeys: [String] = []
    /// Timings so far.
    public var timings = Timings()
    /// The result, when the job ended here.
    public var finished: JobResult?

    /// What comes next.
    public var next: Next { finished == nil ? .compress : .finished }
}

extension FileHandler {
    /// Reads and hashes the source, builds every output key (checked against the destination's key
    /// limits) and looks each up in the destination.
    ///
    /// - Returns: a job to compress; or a finished one: `skipped` (`up_to_date`) when every output
    ///   exists from this original with the same settings and ``Configuration/force`` is off,
    ///   `failed` when a key holds another original's output (`key_collision`, unless
    ///   ``Configuration/overwrite``, or ``Configuration/update`` for an earlier version of the same
    ///   name), when the source cannot be read or when the destination cannot be asked.
    /// - Parameter reserving: whether to reserve the keys against other jobs of this process (off
    ///   for a dry run, which writes nothing).
    public func inspect(_ job: Job, acceptedAt: ContinuousClock.Instant = .now, reserving: Bool = true) -> InspectedJob {
        let clock = ContinuousClock()
        let start = clock.now
        var inspected = InspectedJob(job: job, acceptedAt: acceptedAt, inspectedAt: start)
        inspected.timings.queueMs = (start - acceptedAt).milliseconds
        func end(_ error: ImagePipeError) -> InspectedJob {
            reservations.release(inspected.reservedKeys)
            inspected.reservedKeys = []
            inspected.finished = result(of: inspected, .failed, error)
            inspected.inspectedAt = clock.now
            return inspected
        }

        let source: SourceFile
        do {
            source = try readSource(job)
        } catch {
            return end(error)
        }
        inspected.source = source
        let origin = Origin(sha256: source.sha256, source: job.sourceName)
        inspected.origin = origin
        inspected.timings.readMs = (clock.now - start).milliseconds

        do {
            inspected.outputs = try outputKeys(job, source).map { InspectedJob.PlannedOutput(spec: $0.spec, key: $0.key) }
        } catch {
            return end(error)
        }
        let keys = inspected.outputs.map(\.key)
        if reserving {
            if let clash = reservations.reserve(keys, for: origin) {
                return end(.keyCollision(key: clash.key, source: job.sourceName, existing: clash.holder))
            }
            inspected.reservedKeys = keys
        }

        let checkStart = clock.now
        let found = lookUp(keys)
        for index in inspected.outputs.indices {
            let key = inspected.outputs[index].key
            let existing: ExistingObject?
            switch found[index] {
            case .success(let object): existing = object
            case .failure(let error): return end(error.prefixed("checking \(key)"))
            }
            inspected.outputs[index].existing = existing
            guard let existing, !origin.isSameOriginal(as: existing.origin) else { continue }
            let changed = existing.origin?.source == job.sourceName
            guard configuration.overwrite || (configuration.update && changed) else {
                return end(.keyCollision(key: key, source: job.sourceName, existing: existing.origin))
            }
            // A dry run (nothing reserved) replaces nothing.
            if reserving {
                logger.notice(
                    changed ? "replacing an output of a changed original" : "replacing an output made from another original",
                    metadata: [
                        "key": "\(key)", "source": "\(job.sourceName)",
                        "previous_source": "\(existing.origin?.source ?? "unknown")",
                    ])
            }
        }
        inspected.timings.checkMs = (clock.now - checkStart).milliseconds
        inspected.inspectedAt = clock.now

        if !configuration.force, inspected.outputs.allSatisfy({ $0.isInPlace(for: origin) }) {
            reservations.release(inspected.reservedKeys)
            inspected.reservedKeys = []
            inspected.finished = skippedResult(inspected)
        }
        return inspected
    }

    /// Looks every key up at once: against an object store each look-up is a round trip, and a
    /// re-run that finds everything in place is made of little else.
    private func lookUp(_ keys: [String]) -> [Result<ExistingObject?, ImagePipeError>] {
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
            let ext = values.sourceExtension.isEmpty ? (SourceReader.sniffExtension(source) ?? "bin") : values.sourceExtension
            keys.append((nil, try configuration.keyTemplate.key(for: values, variant: Self.originalVariantName, ext: ext)))
        }
        for (_, key) in keys { try storage.keyLimits.check(key) }
        return keys
    }

    /// The record of a source whose outputs are all in place from this very original.
    private func skippedResult(_ inspected: InspectedJob) -> JobResult {
        var result = self.result(of: inspected, .skipped, nil)
        result.skipCode = .upToDate
        result.reason = "every output is in place from this original"
        for output in inspected.outputs {
            guard let existing = output.existing else { continue }
            guard let spec = output.spec else {
                result.original = StoredObject(key: output.key, url: existing.url, bytes: existing.bytes)
                continue
            }
            result.variants.append(
                VariantRecord(
                    name: spec.name, key: output.key, url: existing.url, format: spec.format,
                    width: existing.origin?.width ?? 0, height: existing.origin?.height ?? 0,
                    bytes: existing.bytes))
        }
        return result
    }

    /// A result carrying what inspection learnt.
    private func result(of inspected: InspectedJob, _ status: JobResult.Status, _ error: ImagePipeError?) -> JobResult {
        var timings = inspected.timings
        timings.totalMs = (ContinuousClock.now - inspected.acceptedAt).milliseconds
        var result = JobResult(
            source: inspected.job.sourceName, status: status, error: error, sha256: inspected.source?.sha256,
            bytes: inspected.source?.byteCount, timings: timings, attempts: inspected.job.attempt)
        result.sourceETag = inspected.source?.etag
        return result
    }
}
