// The queue worker as a swift-service-lifecycle Service: runs until a graceful shutdown, then drains.
import Dispatch
import ImagePipe
import ServiceLifecycle

/// Runs a ``QueueWorker`` inside a `ServiceGroup`.
///
/// On graceful shutdown (SIGTERM or SIGINT when the group is set up for them) the worker stops
/// claiming, lets jobs in flight finish within its shutdown timeout, returns the rest to the inbox,
/// and `run()` returns normally.
public struct WatchService: Service {
    /// The worker.
    public let worker: QueueWorker

    /// Creates the service.
    public init(worker: QueueWorker) {
        self.worker = worker
    }

    public func run() async throws {
        worker.start()
        let worker = self.worker
        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                await worker.waitUntilStopped()
            } onGracefulShutdown: {
                Self.shutDownInBackground(worker)
            }
        } onCancel: {
            Self.shutDownInBackground(worker)
        }
    }

    /// The shutdown blocks while jobs drain, so it runs on a Dispatch thread, not the caller's.
    private static func shutDownInBackground(_ worker: QueueWorker) {
        DispatchQueue.global().async { worker.shutdown() }
    }
}
