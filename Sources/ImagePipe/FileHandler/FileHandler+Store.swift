// Stage 3 of a job: one put per output, then the result; a job that fails midway removes what it stored.
import Foundation
import Synchronization
import Logging

extension FileHandler {
    /// Stores one object, converting every failure to a result.
    public func store(_ object: StorageObject) -> Result<StoredObject, ImagePipeError> {
        do {
            return .success(try storage.put(object))
        } catch {
            return .failure(error.prefixed("storing \(object.key)"))
        }
    }

    /// Stores every output of a prepared job, each put as its own work item handed to `schedule`
    /// (the pipeline's upload queue), and calls `completion` with the result after the last one.
    ///
    /// Each output's bytes are let go of as soon as it is stored, so nothing holds them once the
    /// job is done.
    public func store(
        _ prepared: consuming PreparedJob, schedule: (@escaping @Sendable () -> Void) -> Void,
        completion: @escaping @Sendable (JobResult) -> Void
    ) {
        guard prepared.failure == nil, !prepared.outputs.isEmpty else {
            completion(complete(prepared, stored: [], storeTime: .zero))
            return
        }
        let puts = PutCollector(prepared: prepared)
        for index in 0..<puts.count {
            schedule { [self] in
                let outcome = store(puts.take(index))
                if let (prepared, stored, since) = puts.record(index, outcome) {
                    completion(complete(prepared, stored: stored, storeTime: .now - since))
                }
            }
        }
    }

    /// The final record once every output has been stored or has failed, with the job's keys
    /// released. The job is done only when every put succeeded; otherwise it fails with the first
    /// error, and the outputs it wrote are removed again (best effort, logged when that fails):
    /// never one that was in place from this original before, nor one another job of the same
    /// original shared, since that job may have reported it done.
    public func complete(_ prepared: PreparedJob, stored: [Result<StoredObject, ImagePipeError>], storeTime: Duration) -> JobResult {
        defer { reservations.release(prepared.reservedKeys) }
        var timings = prepared.timings
        timings.storeMs = storeTime.milliseconds
        func result(_ status: JobResult.Status, _ error: ImagePipeError?, _ variants: [VariantRecord] = []) -> JobResult {
            timings.totalMs = (ContinuousClock.now - prepared.acceptedAt).milliseconds
            var record = JobResult(
                source: prepared.job.sourceName, status: status, error: error, sha256: prepared.sha256,
                format: prepared.format, width: prepared.size?.width, height: prepared.size?.height,
                bytes: prepared.bytes, variants: variants, timings: timings, attempts: prepared.job.attempt)
            record.sourceETag = prepared.sourceETag
            return record
        }
        if let failure = prepared.failure { return result(.failed, failure) }

        if let firstFailure = stored.lazy.compactMap({ outcome -> ImagePipeError? in
            if case .failure(let error) = outcome { error } else { nil }
        }).first {
            removeOutputs(of: prepared, stored: stored)
            return result(.failed, firstFailure)
        }
        var records: [VariantRecord] = []
        var original: StoredObject?
        for (output, outcome) in zip(prepared.outputs, stored) {
            guard case .success(let object) = outcome else { continue }
            guard let spec = output.spec else {
                original = object
                continue
            }
            records.append(
                VariantRecord(
                    name: spec.name, key: object.key, url: object.url, format: spec.format,
                    width: output.size.width, height: output.size.height, bytes: object.bytes,
                    quality: output.quality, score: output.score, encodes: output.encodes))
        }
        var done = result(.done, nil, records)
        done.original = original
        done.placeholder = prepared.placeholder
        return done
    }

    /// Removes what a failed job stored that was not in place from its original before.
    private func removeOutputs(of prepared: PreparedJob, stored: [Result<StoredObject, ImagePipeError>]) {
        for (output, outcome) in zip(prepared.outputs, stored) {
            guard case .success(let object) = outcome, !output.wasInPlace, !object.wasInPlace,
                !reservations.isShared(output.object.key)
            else { continue }
            do {
                try storage.delete(output.object.key)
                logger.info("removed an output of a failed job", metadata: ["key": "\(output.object.key)", "source": "\(prepared.job.sourceName)"])
            } catch {
                logger.error(
                    "cannot remove an output of a failed job",
                    metadata: [
                        "key": "\(output.object.key)", "source": "\(prepared.job.sourceName)", "error": "\(error.reason)",
                    ])
            }
        }
    }
}

/// Gathers the outcomes of one job's puts and hands back the job after the last one.
private final class PutCollector: Sendable {
    private struct State {
        var objects: [StorageObject?]
        var outcomes: [Result<StoredObject, ImagePipeError>?]
        var remaining: Int
        var firstStart: ContinuousClock.Instant?
    }
    /// The job with its outputs' bytes taken out (kept in `state.objects` until stored).
    private let prepared: PreparedJob
    private let state: Mutex<State>

    /// Number of objects to store.
    let count: Int

    init(prepared: consuming PreparedJob) {
        let objects = prepared.outputs.map { Optional($0.object) }
        for index in prepared.outputs.indices { prepared.outputs[index].object.body = Data() }
        self.count = objects.count
        self.prepared = prepared
        self.state = Mutex(State(objects: objects, outcomes: Array(repeating: nil, count: objects.count), remaining: objects.count))
    }

    /// Takes object `index` out of the collector; its bytes are released once the caller is done with it.
    func take(_ index: Int) -> StorageObject {
        state.withLock { state -> StorageObject in
            if state.firstStart == nil { state.firstStart = .now }
            defer { state.objects[index] = nil }
            return state.objects[index]!
        }
    }

    /// Records one outcome; after the last, returns the job, every outcome and when storing began.
    func record(
        _ index: Int, _ outcome: Result<StoredObject, ImagePipeError>
    )
        -> (PreparedJob, [Result<StoredObject, ImagePipeError>], ContinuousClock.Instant)?
    {
        state.withLock { state in
            state.outcomes[index] = outcome
            state.remaining -= 1
            guard state.remaining == 0 else { return nil }
            return (prepared, state.outcomes.map { $0! }, state.firstStart ?? .now)
        }
    }
}

extension FileHandler {
    /// Ends an inspected job without compressing it, with `result`, releasing its keys.
    public func abandon(_ inspected: InspectedJob, _ result: JobResult) -> JobResult {
        reservations.release(inspected.reservedKeys)
        return result
    }
}
