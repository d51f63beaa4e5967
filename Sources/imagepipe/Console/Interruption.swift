// Ctrl-C (or SIGTERM, SIGHUP) during a batch: the first lets the images in flight finish and skips the rest, a second stops at once.
import Dispatch
import Foundation
import Logging
import Synchronization

/// Watches SIGINT, SIGTERM and SIGHUP (a closing terminal) (blocked in every thread by `main`, so they arrive here).
///
/// A batch stopped this way can simply be run again: finished images are skipped.
final class Interruption: Sendable {
    private let requested = Atomic<Bool>(false)
    private let graceful = Atomic<Bool>(false)
    private let onRequest = Mutex<(@Sendable () -> Void)?>(nil)
    // Dispatch sources are thread-safe; the existential is just not marked Sendable.
    nonisolated(unsafe) private var sources: [any DispatchSourceSignal] = []

    init(logger: Logger) {
        let queue = DispatchQueue(label: "imagepipe.signals")
        sources = [SIGINT, SIGTERM, SIGHUP].map { signal in
            let source = DispatchSource.makeSignalSource(signal: signal, queue: queue)
            source.setEventHandler { [weak self] in
                guard let self else { return }
                guard graceful.load(ordering: .relaxed) else {
                    logger.notice("interrupted before any image started")
                    exit(130)
                }
                if requested.exchange(true, ordering: .relaxed) {
                    logger.warning("stopped at once: images in flight were not finished; run the batch again to resume")
                    exit(130)
                }
                logger.notice("interrupted: finishing the images in flight, starting no more (again to stop at once)")
                onRequest.withLock { $0 }?()
            }
            source.resume()
            return source
        }
    }

    deinit { for source in sources { source.cancel() } }

    /// From now on the first signal lets the images in flight finish (before, it stops at once) and
    /// calls `stop`, which starts no more.
    func finishWorkInFlight(_ stop: @escaping @Sendable () -> Void) {
        onRequest.withLock { $0 = stop }
        graceful.store(true, ordering: .relaxed)
    }

    /// Whether a stop was asked for.
    var isRequested: Bool { requested.load(ordering: .relaxed) }
}
