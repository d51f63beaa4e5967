// `watch --keep-done`: a timer of its own in the worker that deletes old jobs from done/, off the cooperative pool.
import ImagePipe
public import Logging
public import ServiceLifecycle

/// Deletes jobs from a queue directory's `done/` once they finished longer than `keep` ago, now and
/// then every tenth of `keep` (at least every second, at most every hour), until a graceful shutdown.
///
/// A service beside the worker loop rather than part of its upkeep: a first prune of a large
/// `done/` takes a while and must not hold up the rescans. The deletes block, so each prune runs
/// through ``BlockingIO``.
public final class DoneCleaner: Service, Sendable {
    /// How long a done job is kept.
    public let keep: Duration
    let retention: QueueRetention
    let logger: Logger

    /// A cleaner of `queue`'s `done/`.
    public init(queue: QueueDirectory, keep: Duration, logger: Logger) {
        self.keep = keep
        self.retention = QueueRetention(queue: queue)
        self.logger = logger
    }

    /// How often it looks.
    public var interval: Duration { min(max(keep / 10, .seconds(1)), .seconds(3600)) }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                let (retention, keep) = (self.retention, self.keep)
                let outcome = await BlockingIO.run { retention.prune(olderThan: keep) }
                if !outcome.deleted.isEmpty {
                    self.logger.info(
                        "deleted done jobs past their retention",
                        metadata: ["jobs": .stringConvertible(outcome.deleted.count), "keep_done_s": .stringConvertible(keep.timeInterval)])
                }
                for problem in outcome.problems { self.logger.warning("cannot delete a done job", metadata: ["error": "\(problem)"]) }
                try? await Task.sleep(for: self.interval)
            }
        }
    }
}
