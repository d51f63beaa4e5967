// Stage 3 of a job (blocking I/O): one put per output, then the result; a job that fails midway removes what it stored.
import Foundation
import Synchronization
import Logging

extension FileHandler {
    /// Stores every output of a compressed job, each put as its own work item handed to `schedule`
    /// (the pipeline's transfer queue), and calls `completion` with the result after the last one
    /// (on whichever thread finished it: a store may complete puts after the work item returned).
    ///
    /// `handedOff` is called once every put has taken its bytes (its call returned): from then on
    /// the job holds no image data while a store makes its files durable, so the pipeline can take
    /// in the next one. When the last put finished inside its call, that is right after `completion`.
    /// A job that has ended already (failed or skipped) completes at once.
    public func store(
        _ context: consuming JobContext, schedule: (@escaping @Sendable () -> Void) -> Void,
        handedOff: @escaping @Sendable () -> Void = {}, completion: @escaping @Sendable (JobResult) -> Void
    ) {
        guard !context.hasEnded, !context.outputs.isEmpty else {
            completion(end(context))
            handedOff()
            return
        }
        let puts = Puts(context)
        let finish: @Sendable (Puts.Events) -> Void = { [self] events in
            if let context = events.finished { completion(end(context)) }
            if events.handedOff { handedOff() }
        }
        for index in 0..<puts.count {
            schedule { [self] in
                // The object's bytes go out of scope before the job may finish and give its room
                // back, so no more jobs' outputs are alive than the room allows.
                do {
                    let object = puts.take(index)
                    let key = object.key
                    storage.put(object) { outcome in finish(puts.record(index, outcome.mapError { $0.prefixed("storing \(key)") })) }
                }
                finish(puts.returned())
            }
        }
    }

    /// Ends a job: its keys are released, and when a put failed the job fails with the first
    /// error and the outputs it wrote are removed again (best effort, logged when that fails):
    /// never one that was in place from this original before, nor one another job of the same
    /// original shared, since that job may have reported it done, nor one whose key held anything
    /// before (an edited photo's earlier version, or what `--overwrite` replaced): that URL was
    /// served, and removing it would leave it answering 404 until a later run succeeds, where the
    /// new picture under it is right.
    public func end(_ context: consuming JobContext) -> JobResult {
        defer { reservations.release(context.reservedKeys) }
        if !context.hasEnded, let failure = context.outputs.lazy.compactMap(\.failure).first {
            removeOutputs(of: context)
            context.failure = failure
        }
        return context.result()
    }

    /// Removes what a failed job stored that was not in place from its original before.
    private func removeOutputs(of context: JobContext) {
        for output in context.outputs {
            guard case .success(let object) = output.stored, output.existing == nil, !output.wasInPlace(for: context.origin),
                !object.wasInPlace, !reservations.isShared(output.key)
            else { continue }
            do {
                try storage.delete(output.key)
                logger.info("removed an output of a failed job", metadata: ["key": "\(output.key)", "source": "\(context.job.sourceName)"])
            } catch {
                logger.error(
                    "cannot remove an output of a failed job",
                    metadata: ["key": "\(output.key)", "source": "\(context.job.sourceName)", "error": "\(error.reason)"])
            }
        }
    }
}

extension JobContext.Output {
    /// The store's failure, if it failed.
    fileprivate var failure: ImagePipeError? {
        if case .failure(let error) = stored { error } else { nil }
    }
}

/// Gathers the outcomes of one job's puts and hands back the job after the last one.
private final class Puts: Sendable {
    /// What an event set off: the job's bytes all handed off, the job finished, or both.
    struct Events {
        var handedOff = false
        var finished: JobContext?
    }

    private struct State {
        /// The job, its outputs' bodies taken out into ``objects`` until each is stored.
        var context: JobContext
        var objects: [StorageObject?]
        var remaining: Int
        var running: Int
        var firstStart: ContinuousClock.Instant?
        /// When each put started, for its span (traced jobs only).
        var starts: [ContinuousClock.Instant?]
    }
    private let state: Mutex<State>

    /// Number of objects to store.
    let count: Int

    init(_ context: consuming JobContext) {
        let objects = context.outputs.map(\.object)
        for index in context.outputs.indices { context.outputs[index].object?.body = Data() }
        count = objects.count
        state = Mutex(
            State(
                context: context, objects: objects, remaining: objects.count, running: objects.count,
                starts: Array(repeating: nil, count: context.trace == nil ? 0 : objects.count)))
    }

    /// Takes object `index` out; its bytes are released once the caller is done with it.
    func take(_ index: Int) -> StorageObject {
        state.withLock { state -> StorageObject in
            let now = ContinuousClock.now
            if state.firstStart == nil { state.firstStart = now }
            if state.context.trace != nil { state.starts[index] = now }
            defer { state.objects[index] = nil }
            return state.objects[index]!
        }
    }

    /// Records one outcome; the job finishes with the last, once every put call has also returned.
    func record(_ index: Int, _ outcome: Result<StoredObject, ImagePipeError>) -> Events {
        state.withLock { state in
            state.context.outputs[index].stored = outcome
            state.remaining -= 1
            if let start = state.starts.isEmpty ? nil : state.starts[index] {
                let output = state.context.outputs[index]
                var attributes: [(String, Span.Value)] = [("imagepipe.key", .string(output.key))]
                var status = Span.Status.unset
                switch outcome {
                case .success(let stored): attributes.append(("imagepipe.bytes_out", .int(stored.bytes)))
                case .failure(let error):
                    attributes.append(error.spanAttribute)
                    status = error.spanStatus
                }
                state.context.trace?.add("store", from: start, to: .now, kind: .client, attributes: attributes, status: status)
            }
            return Events(finished: finished(&state))
        }
    }

    /// Records that a put call returned; after the last, the bytes are all handed off.
    func returned() -> Events {
        state.withLock { state in
            state.running -= 1
            return Events(handedOff: state.running == 0, finished: finished(&state))
        }
    }

    private func finished(_ state: inout State) -> JobContext? {
        guard state.remaining == 0 && state.running == 0 else { return nil }
        state.context.timings.storeMs = (ContinuousClock.now - (state.firstStart ?? .now)).milliseconds
        return state.context
    }
}
