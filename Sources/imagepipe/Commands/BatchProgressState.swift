// What a batch's monitoring reads while the batch runs: its storage once made, and how many jobs there are and have finished.
import ImagePipe
import Synchronization

/// The batch as its monitoring sees it.
///
/// Monitoring starts before the sources are read (a `--from` list may take a while to arrive), so
/// the storage is handed over once it exists; until then `/readyz` says the storage was not checked.
final class BatchProgressState: Sendable {
    private struct State {
        var storage: (any StorageRepository)?
        var pipeline: JobPipeline?
        var total = 0
        var finished = 0
    }

    private let state = Mutex(State())

    /// The batch is about to run `total` jobs through `pipeline` into `storage`.
    func started(total: Int, pipeline: JobPipeline) {
        state.withLock { state in
            state.storage = pipeline.handler.storage
            state.pipeline = pipeline
            state.total = total
        }
    }

    /// One more job finished.
    func finishedOne() {
        state.withLock { $0.finished += 1 }
    }

    /// The destination, once the batch has one.
    var storage: (any StorageRepository)? { state.withLock { $0.storage } }

    /// Jobs not started yet, and jobs in the pipeline.
    var workload: (waiting: Int, inFlight: Int) {
        let (total, finished, pipeline) = state.withLock { ($0.total, $0.finished, $0.pipeline) }
        let inFlight = pipeline?.capacity.held ?? 0
        return (max(0, total - finished - inFlight), inFlight)
    }
}
