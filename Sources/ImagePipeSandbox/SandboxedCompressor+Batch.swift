// Small images handed to a helper several at a time: one round trip between processes for a batch, not one per image.
import Foundation
public import ImagePipe

extension SandboxedCompressor {
    /// Small sources held in memory go to a helper up to 16 at a time, inside one message. On
    /// 2,000 small JPEGs, one round trip per image (two switches between processes, each cooling
    /// the caches and mappings the other side warmed) cost more CPU than the sandbox's bound allows
    /// (docs/performance.md, "Image helpers"); a photo's own work dwarfs its round trip.
    public var batching: CompressionBatching {
        CompressionBatching(sources: 16, sourceBytes: HelperResult.inlineLimit, totalBytes: HelperServer.batchMessageBytes)
    }

    /// Compresses a batch in helpers: as few round trips as the helpers allow, and every source as
    /// safe as alone. A helper serves no source after one it failed: the rest go to the next helper.
    /// When a helper dies, runs past the time limit or misbehaves during a batch, each source it did
    /// not answer for is compressed again alone, in a helper of its own: a crash that was the
    /// image's comes back and fails that image alone (`decoder_crashed`, `job_timeout`), and the
    /// others are made as if nothing happened.
    public func compress(
        batch sources: [SourceImage], variants: [VariantSpec], limits: CompressionLimits, memory: WorkingMemory
    ) -> [Result<CompressedImage, ImagePipeError>] {
        var results: [Result<CompressedImage, ImagePipeError>] = []
        results.reserveCapacity(sources.count)
        var alone = false
        while results.count < sources.count {
            let rest = Array(sources[results.count...].prefix(HelperRequest.maxBatch))
            guard !alone, rest.count > 1, rest.allSatisfy({ batching.admits($0.content) }) else {
                let source = sources[results.count]
                results.append(Result { () throws(ImagePipeError) in try compress(source, variants: variants, limits: limits, memory: memory) })
                continue
            }
            let answered: [Result<CompressedImage, ImagePipeError>]
            do throws(ImagePipeError) {
                answered = try runBatch(rest, variants: variants, limits: limits, memory: memory)
            } catch {
                // No helper could be had: every source left fails as one alone would.
                while results.count < sources.count { results.append(.failure(error)) }
                break
            }
            results += answered
            if answered.count < rest.count, answered.last.map({ if case .failure = $0 { false } else { true } }) ?? true {
                alone = true
            }
        }
        return results
    }

    /// One batch in one helper: its results in order, up to the first failure (which ends it), or
    /// fewer when the helper ended before it answered for every source (the caller goes on alone).
    /// Throws only when no helper can be had.
    private func runBatch(
        _ sources: [SourceImage], variants: [VariantSpec], limits: CompressionLimits, memory: WorkingMemory
    ) throws(ImagePipeError) -> [Result<CompressedImage, ImagePipeError>] {
        for tries in 1... {
            let answered = try withHelper(memory: memory) { (helper, granted) -> [Result<CompressedImage, ImagePipeError>]? in
                var results: [Result<CompressedImage, ImagePipeError>] = []
                do throws(Failure) {
                    try exchange(batch: sources, helper, variants: variants, limits: limits, memory: memory, granted: &granted, results: &results)
                    let failed = results.contains { if case .failure = $0 { true } else { false } }
                    pool.checkin(helper, jobFailed: failed, jobs: results.count)
                    return results
                } catch {
                    switch error {
                    case .failed(let error):
                        // A failure that is no image's (the helper's own message said so): as alone.
                        pool.checkin(helper, jobFailed: true)
                        return results + [.failure(error)]
                    case .unusable:
                        // Only before the batch was handed over: a second helper is tried, then none.
                        retireUnusable(helper)
                        return tries < 2 ? nil : []
                    case .ended(let reason, _):
                        // Which source it was working on is not known for sure: each one left is made again alone.
                        let left = sources.count - results.count
                        let first = sources[results.count].name
                        pool.retire(helper, reason: reason, source: left > 1 ? "\(first) or one of the \(left - 1) after it in its batch" : first)
                        pool.checkinEnded()
                        return results
                    }
                }
            }
            if let answered { return answered }
        }
        preconditionFailure("unreachable")
    }

    private func exchange(
        batch sources: [SourceImage], _ helper: HelperProcess, variants: [VariantSpec], limits: CompressionLimits, memory: WorkingMemory,
        granted: inout Int, results: inout [Result<CompressedImage, ImagePipeError>]
    ) throws(Failure) {
        // The time limit is a job's, counted afresh whenever the helper answers for some.
        var left = jobTimeout
        try setUp(helper, variants: variants, limits: limits, left: &left)
        // One advance for the batch: its images are made one after the other.
        var advance = Int.max
        if let limit = memory.limit {
            granted = memory.acquire(min(Self.advance, limit / 4))
            advance = granted
        }
        let described = sources.map { source -> HelperSource in
            guard case .bytes(let data) = source.content else { preconditionFailure("a batch holds sources in memory") }
            return HelperSource(name: source.name, focus: source.focus, isFile: false, inline: [UInt8](data), advance: advance)
        }
        do {
            let started = ContinuousClock.now
            try helper.channel.send(HelperRequest.compressBatch(described).encoded(), timeout: left)
            left -= ContinuousClock.now - started
        } catch {
            throw .unusable
        }
        while results.count < sources.count {
            let (reply, message) = try nextReply(helper, left: &left)
            switch reply {
            case .need(let bytes) where message.descriptors.isEmpty:
                try grant(bytes, to: helper, from: memory, granted: &granted, left: &left)
            case .batch(let items) where items.count <= sources.count - results.count:
                var files = message.descriptors[...]
                // Whatever is not handed to an output when this message's results end is closed.
                defer { for file in files { close(file) } }
                guard files.count == items.reduce(0, { if case .compressed(let result) = $1 { $0 + result.files } else { $0 } }) else {
                    throw .ended(.misbehaved, "\(files.count) output files for a batch's \(items.count) results")
                }
                for (index, item) in items.enumerated() {
                    let source = sources[results.count]
                    switch item {
                    case .compressed(let result):
                        let mine = Array(files.prefix(result.files))
                        files = files.dropFirst(result.files)
                        let outputs = try Self.take(mine, for: result, variants: variants, limits: limits, sourceBytes: Self.byteCount(source))
                        results.append(.success(CompressedImage(result, variants: variants, outputs: outputs)))
                    case .failed(let error):
                        guard Self.helperCodes.contains(error.code) else { throw .ended(.misbehaved, "a failure coded \(error.code)") }
                        // The helper ends a batch at its first failure: one that goes on is not believed.
                        guard index == items.count - 1 else { throw .ended(.misbehaved, "results after a failure") }
                        results.append(.failure(error))
                        return
                    }
                }
                left = jobTimeout
            default:
                message.closeDescriptors()
                throw .ended(.misbehaved, "a message out of turn")
            }
        }
    }
}
