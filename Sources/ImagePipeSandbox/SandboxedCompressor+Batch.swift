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

    /// The most sources one helper serves in the batches of one session (see ``HelperSession``):
    /// a lane that keeps finding small jobs waiting hands them to the helper it has, batch after
    /// batch, up to this; then, or when nothing waits, the helper ends. A helper's start (a fork and
    /// its first touch of memory and code) costs a few small images' work, so batches of the few
    /// that wait at once (four or five on two cores) each in a helper of their own would cost more
    /// than their images (docs/performance.md, "Image helpers"); what a helper that a hostile image
    /// took over could see of others stays bounded by this number.
    static let sourcesPerHelper = 256

    public func openSession() -> (any CompressionSession)? { HelperSession(pool: pool) }

    public func compress(
        batch sources: [SourceImage], variants: [VariantSpec], limits: CompressionLimits, memory: WorkingMemory
    ) -> [Result<CompressedImage, ImagePipeError>] {
        compress(batch: sources, variants: variants, limits: limits, memory: memory, session: nil)
    }

    /// Compresses a batch in helpers: as few round trips as the helpers allow, and every source as
    /// safe as alone; within a session, in the session's helper while it has room. A helper serves
    /// no source after one it failed: the rest go to the next helper. When a helper dies, runs past
    /// the time limit or misbehaves during a batch, each source it did not answer for is compressed
    /// again alone, in a helper of its own: a crash that was the image's comes back and fails that
    /// image alone (`decoder_crashed`, `job_timeout`), and the others are made as if nothing happened.
    public func compress(
        batch sources: [SourceImage], variants: [VariantSpec], limits: CompressionLimits, memory: WorkingMemory,
        session: (any CompressionSession)?
    ) -> [Result<CompressedImage, ImagePipeError>] {
        let session = session as? HelperSession
        var results: [Result<CompressedImage, ImagePipeError>] = []
        results.reserveCapacity(sources.count)
        var alone = false
        while results.count < sources.count {
            let room = session.map { $0.room } ?? Self.sourcesPerHelper
            let rest = Array(sources[results.count...].prefix(min(HelperRequest.maxBatch, max(1, room))))
            guard !alone, rest.count > 1 || (session?.room ?? 0) > 0, rest.allSatisfy({ batching.admits($0.content) }) else {
                let source = sources[results.count]
                results.append(Result { () throws(ImagePipeError) in try compress(source, variants: variants, limits: limits, memory: memory) })
                continue
            }
            let answered: [Result<CompressedImage, ImagePipeError>]
            do throws(ImagePipeError) {
                answered = try runBatch(rest, variants: variants, limits: limits, memory: memory, session: session)
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

    /// One batch in one helper (the session's, or one of its own): its results in order, up to the
    /// first failure (which ends it), or fewer when the helper ended before it answered for every
    /// source (the caller goes on alone). Throws only when no helper can be had.
    private func runBatch(
        _ sources: [SourceImage], variants: [VariantSpec], limits: CompressionLimits, memory: WorkingMemory, session: HelperSession?
    ) throws(ImagePipeError) -> [Result<CompressedImage, ImagePipeError>] {
        for tries in 1... {
            let helper: HelperProcess
            if let kept = session?.helper {
                helper = kept
            } else {
                helper = try pool.checkout()
            }
            var granted = 0
            defer { if granted > 0 { memory.release(granted) } }
            var results: [Result<CompressedImage, ImagePipeError>] = []
            do throws(Failure) {
                try exchange(batch: sources, helper, variants: variants, limits: limits, memory: memory, granted: &granted, results: &results)
                let failed = results.contains { if case .failure = $0 { true } else { false } }
                // Kept for the session's next batch while it has room; ended otherwise.
                if let session, !failed, session.keep(helper, served: sources.count) { return results }
                session?.end()
                pool.checkin(helper)
                return results
            } catch {
                session?.end()
                switch error {
                case .failed(let error):
                    // A failure that is no image's (the helper's own message said so): as alone.
                    pool.checkin(helper)
                    return results + [.failure(error)]
                case .unusable:
                    // Only before the batch was handed over: a second helper is tried, then none.
                    retireUnusable(helper)
                    if tries < 2 { continue }
                    return []
                case .ended(let reason, let detail):
                    // Which source it was working on is not known for sure: each one left is made again alone.
                    let left = sources.count - results.count
                    let first = sources[results.count].name
                    pool.retire(
                        helper, reason: reason, source: left > 1 ? "\(first) or one of the \(left - 1) after it in its batch" : first,
                        detail: detail)
                    pool.checkinEnded()
                    return results
                }
            }
        }
        preconditionFailure("unreachable")
    }

    private func exchange(
        batch sources: [SourceImage], _ helper: HelperProcess, variants: [VariantSpec], limits: CompressionLimits, memory: WorkingMemory,
        granted: inout Int, results: inout [Result<CompressedImage, ImagePipeError>]
    ) throws(Failure) {
        // The clocks are a job's, started afresh whenever the helper answers for some.
        var clock = Clock(jobTimeout: jobTimeout)
        try setUp(helper, variants: variants, limits: limits, clock: &clock)
        // One advance for the batch: its images are made one after the other.
        var advance = Int.max
        if let limit = memory.limit {
            guard let taken = memory.acquire(min(Self.advance, limit / 4), before: clock.deadline) else {
                throw .failed(Self.memoryWaitError)
            }
            granted = taken
            advance = granted
        }
        // A nonce for each source: every answer, and every need for memory, names the one it is for,
        // which must be the next not yet answered.
        let nonces = sources.map { _ in Self.nonce() }
        let described = zip(sources, nonces).map { source, nonce -> HelperSource in
            guard case .bytes(let data) = source.content else { preconditionFailure("a batch holds sources in memory") }
            return HelperSource(nonce: nonce, name: source.name, focus: source.focus, isFile: false, inline: [UInt8](data), advance: advance)
        }
        do {
            let started = ContinuousClock.now
            try helper.channel.send(HelperRequest.compressBatch(described).encoded(), timeout: clock.remaining)
            clock.spent(since: started)
        } catch {
            throw .unusable
        }
        // The source the helper last asked memory for: it holds back the results it made (up to a
        // second), so a need may name a source after the next to be answered, never one before it,
        // nor one before the last it asked for.
        var working = 0
        while results.count < sources.count {
            let (reply, message) = try nextReply(helper, clock: &clock)
            switch reply {
            case .need(let nonce, let bytes) where message.descriptors.isEmpty:
                guard let index = nonces[results.count...].firstIndex(of: nonce), index >= working else {
                    throw .ended(.misbehaved, "a request for memory naming a job other than the batch's next ones")
                }
                // A source's needs are counted as its own.
                if index > working { clock.needs = 0 }
                working = index
                try grant(bytes, nonce: nonce, to: helper, from: memory, granted: &granted, clock: &clock)
            case .batch(let items) where items.count <= sources.count - results.count:
                var files = message.descriptors[...]
                // Whatever is not handed to an output when this message's results end is closed.
                defer { for file in files { close(file) } }
                guard files.count == items.reduce(0, { if case .compressed(_, let result) = $1 { $0 + result.files } else { $0 } }) else {
                    throw .ended(.misbehaved, "\(files.count) output files for a batch's \(items.count) results")
                }
                for (index, item) in items.enumerated() {
                    let source = sources[results.count]
                    guard item.nonce == nonces[results.count] else { throw .ended(.misbehaved, "a reply naming another job than the batch's next") }
                    switch item {
                    case .compressed(_, let result):
                        let mine = Array(files.prefix(result.files))
                        files = files.dropFirst(result.files)
                        let outputs = try Self.take(mine, for: result, variants: variants, limits: limits, sourceBytes: Self.byteCount(source))
                        results.append(.success(CompressedImage(result, variants: variants, outputs: outputs)))
                    case .failed(_, let error):
                        guard Self.helperCodes.contains(error.code) else { throw .ended(.misbehaved, "a failure coded \(error.code)") }
                        // The helper ends a batch at its first failure: one that goes on is not believed.
                        guard index == items.count - 1 else { throw .ended(.misbehaved, "results after a failure") }
                        results.append(.failure(error))
                        return
                    }
                }
                clock = Clock(jobTimeout: jobTimeout)
            default:
                message.closeDescriptors()
                throw .ended(.misbehaved, "a message out of turn")
            }
        }
    }
}

/// The helper the batches of one compression lane share while small jobs keep waiting (see
/// ``CompressionSession``): taken for the first, given each next one, ended when the lane closes
/// the session, when a batch failed or the helper misbehaved, or once it served
/// ``SandboxedCompressor/sourcesPerHelper`` sources.
final class HelperSession: CompressionSession, @unchecked Sendable {
    private let pool: HelperPool
    /// The helper kept for the next batch.
    private(set) var helper: HelperProcess?
    /// The sources the session's helper was given.
    private var served = 0

    init(pool: HelperPool) {
        self.pool = pool
    }

    var room: Int { max(0, SandboxedCompressor.sourcesPerHelper - served) }

    /// Keeps `helper`, which answered a batch of `served` more sources, for the next batch: false
    /// (not kept) once it has served its share.
    func keep(_ helper: HelperProcess, served count: Int) -> Bool {
        served += count
        guard room > 0 else {
            self.helper = nil
            return false
        }
        self.helper = helper
        return true
    }

    /// Forgets the helper (its caller ends it) and takes no more batches.
    func end() {
        helper = nil
        served = SandboxedCompressor.sourcesPerHelper
    }

    func close() {
        if let helper { pool.checkin(helper) }
        end()
    }
}
