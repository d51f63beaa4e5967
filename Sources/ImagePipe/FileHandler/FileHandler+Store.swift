// Stage 3 of a job: one put per output, then the result; a job that fails midway removes what it stored.
import Foundation
import Synchronization
import Logging

extension FileHandler {
    /// Stores one object and calls `completion` with the outcome, a failure naming the key.
    public func store(_ object: StorageObject, completion: @escaping @Sendable (Result<StoredObject, ImagePipeError>) -> Void) {
        let key = object.key
        storage.put(object) { outcome in
            completion(outcome.mapError { $0.prefixed("storing \(key)") })
        }
    }

    /// Stores every output of a prepared job, each put as its own work item handed to `schedule`
    /// (the pipeline's upload queue), and calls `completion` with the result after the last one
    /// (on whichever thread finished it: a store may complete puts after the work item returned).
    ///
    /// `handedOff` is called once every put has taken its bytes (its call returned): from then on
    /// the job holds no image data while a store makes its files durable, so the pipeline can take
    /// in the next one. When the last put finished inside its call, that is right after `completion`.
    public func store(
        _ prepared: consuming PreparedJob, schedule: (@escaping @Sendable () -> Void) -> Void,
        handedOff: @escaping @Sendable () -> Void = {}, completion: @escaping @Sendable (JobResult) -> Void
    ) {
        guard prepared.failure == nil, !prepared.outputs.isEmpty else {
            completion(complete(prepared, stored: [], storeTime: .zero))
            handedOff()
            return
        }
        let puts = PutCollector(prepared: prepared)
        let finish: @Sendable (PutCollector.Events) -> Void = { [self] events in
            if let (prepared, stored, since) = events.finished {
                completion(complete(prepared, stored: stored, storeTime: .now - since))
            }
            if events.handedOff { handedOff() }
        }
        for index in 0..<puts.count {
            schedule { [self] in
                store(puts.take(index)) { outcome in finish(puts.record(index, outcome)) }
                finish(puts.returned())
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
    /// What an event set off: the job's bytes all handed off, the job finished, or both.
    struct Events {
        var handedOff = false
        var finished: (PreparedJob, [Result<StoredObject, ImagePipeError>], ContinuousClock.Instant)?
    }

    private struct State {
        var objects: [StorageObject?]
        var outcomes: [Result<StoredObject, ImagePipeError>?]
        var remaining: Int
        var running: Int
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
        self.state = Mutex(
            State(
                objects: objects, outcomes: Array(repeating: nil, count: objects.count), remaining: objects.count,
                running: objects.count))
    }

    /// Takes object `index` out of the collector; its bytes are released once the caller is done with it.
    func take(_ index: Int) -> StorageObject {
        state.withLock { state -> StorageObject in
            if state.firstStart == nil { state.firstStart = .now }
            defer { state.objects[index] = nil }
            return state.objects[index]!
        }
    }

    /// Records one outcome; the job finishes with the last, once every put call has also returned.
    func record(_ index: Int, _ outcome: Result<StoredObject, ImagePipeError>) -> Events {
        state.withLock { state in
            state.outcomes[index] = outcome
            state.remaining -= 1
            return Events(finished: finished(state))
        }
    }

    /// Records that a put call returned; after the last, the bytes are all handed off.
    func returned() -> Events {
        state.withLock { state in
            state.running -= 1
            return Events(handedOff: state.running == 0, finished: finished(state))
        }
    }

    private func finished(_ state: State) -> (PreparedJob, [Result<StoredObject, ImagePipeError>], ContinuousClock.Instant)? {
        guard state.remaining == 0 && state.running == 0 else { return nil }
        return (prepared, state.outcomes.map { $0! }, state.firstStart ?? .now)
    }
}

extension FileHandler {
    /// Ends an inspected job without compressing it, with `result`, releasing its keys.
    public func abandon(_ inspected: InspectedJob, _ result: JobResult) -> JobResult {
        reservations.release(inspected.reservedKeys)
        return result
    }
}
