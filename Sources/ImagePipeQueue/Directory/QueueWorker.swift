// The watch-mode worker on a queue directory: a WorkerLoop over a DirectoryQueue, started and stopped by plain calls.
import Dispatch
import Foundation
public import ImagePipe
public import Logging
import Synchronization

/// Runs the jobs of a queue directory through a ``JobPipeline``.
///
/// A ``DirectoryQueue`` finds and claims deliveries, a ``WorkerLoop`` runs them; this type puts the
/// two together for callers that are not async (tests, embedding programs): ``start()`` runs the loop,
/// ``shutdown()`` stops it and blocks until it has stopped. The loop's tasks run on a Dispatch queue
/// of their own (see ``DispatchExecutor``), so callers blocked here cannot starve it. (A `ServiceGroup`
/// could not do that: it is an actor, which runs on Swift's cooperative pool.)
public final class QueueWorker: Sendable {
    /// Worker settings.
    public struct Configuration: Sendable {
        /// Retries of transient failures.
        public var retry: RetryPolicy
        /// How long in-flight jobs may run after a shutdown request before they go back to the inbox.
        public var shutdownTimeout: Duration
        /// The safety-net rescan of the inbox (and of abandoned claim areas).
        public var rescanInterval: Duration
        /// How often a status line is logged; zero for never.
        public var statusInterval: Duration
        /// How long a delivery whose writers cannot be seen (another user's file) must stay unchanged
        /// before it is taken.
        public var quietPeriod: Duration
        /// How long an empty subdirectory of the inbox must stay unchanged before a rescan removes it.
        public var emptyDirectoryIdle: Duration
        /// How long claiming pauses after a job finds the storage full; the pause doubles while the
        /// storage stays full, up to the retry policy's longest delay.
        public var fullStoragePause: Duration

        /// Creates settings: 5 attempts, 30 s shutdown timeout, rescans every 5 s, status every 30 s,
        /// a 10 s quiet period, empty delivery folders removed after a minute, a 5 s first pause when
        /// the storage is full.
        public init(
            retry: RetryPolicy = .init(), shutdownTimeout: Duration = .seconds(30),
            rescanInterval: Duration = .seconds(5), statusInterval: Duration = .seconds(30),
            quietPeriod: Duration = .seconds(10), emptyDirectoryIdle: Duration = .seconds(60),
            fullStoragePause: Duration = .seconds(5)
        ) {
            self.retry = retry
            self.shutdownTimeout = shutdownTimeout
            self.rescanInterval = rescanInterval
            self.statusInterval = statusInterval
            self.quietPeriod = quietPeriod
            self.emptyDirectoryIdle = emptyDirectoryIdle
            self.fullStoragePause = fullStoragePause
        }

        /// The loop's part of the settings.
        public var loop: WorkerLoop.Configuration {
            .init(retry: retry, shutdownTimeout: shutdownTimeout, statusInterval: statusInterval, fullStoragePause: fullStoragePause)
        }

        /// The directory queue's part of the settings.
        public var directory: DirectoryQueue.Configuration {
            .init(rescanInterval: rescanInterval, quietPeriod: quietPeriod, emptyDirectoryIdle: emptyDirectoryIdle)
        }
    }

    /// Counts since start.
    public struct Statistics: Sendable, Equatable {
        /// Deliveries seen and not yet claimed.
        public var waiting = 0
        /// Claimed jobs in the pipeline.
        public var inFlight = 0
        /// Jobs waiting for a retry.
        public var retrying = 0
        /// Jobs finished into done/.
        public var done = 0
        /// Jobs finished into failed/.
        public var failed = 0
        /// Rescans of the inbox finished: what a test waits for to know the inbox was looked at again.
        public var rescans = 0
    }

    /// The queue.
    public let queue: QueueDirectory
    /// The pipeline jobs run through.
    public let pipeline: JobPipeline
    /// The settings.
    public let configuration: Configuration
    /// The loop, e.g. to run in a `ServiceGroup` of the caller's instead of through ``start()``.
    public let loop: WorkerLoop
    private let directory: DirectoryQueue
    private let logger: Logger
    private let started = Mutex(false)
    private let running = DispatchGroup()
    private let executor = DispatchExecutor(label: "imagepipe.worker-loop")

    /// Creates a worker with its own claim area in `queue`.
    public init(
        queue: QueueDirectory, pipeline: JobPipeline, configuration: Configuration = .init(),
        logger: Logger = Logger(label: "imagepipe.queue")
    ) throws(ImagePipeError) {
        self.queue = queue
        self.pipeline = pipeline
        self.configuration = configuration
        self.logger = logger
        self.directory = try DirectoryQueue(directory: queue, configuration: configuration.directory, logger: logger)
        self.loop = WorkerLoop(queue: directory, pipeline: pipeline, configuration: configuration.loop, logger: logger)
    }

    /// The name of this worker's claim area.
    public var id: String { directory.id }

    /// A snapshot of the counters.
    public var statistics: Statistics {
        let counts = loop.statistics
        return Statistics(
            waiting: directory.pendingCount, inFlight: counts.inFlight, retrying: counts.retrying,
            done: counts.done, failed: counts.failed, rescans: counts.upkeeps)
    }

    /// Recovers abandoned claims, scans the inbox, starts watching and claiming; returns once watching.
    public func start() {
        guard
            started.withLock({ started in
                defer { started = true }; return !started
            })
        else { return }
        running.enter()
        let opened = DispatchSemaphore(value: 0)
        Task(executorPreference: executor) { [loop] in
            await loop.waitUntilOpened()
            opened.signal()
        }
        Task(executorPreference: executor) { [running, loop, logger] in
            do {
                try await loop.run()
            } catch {
                logger.error("the worker stopped: \(error)")
                opened.signal()
            }
            running.leave()
        }
        opened.wait()
    }

    /// Stops claiming, lets in-flight jobs finish within the shutdown timeout, returns the rest to the
    /// inbox. Blocks until done; safe to call more than once.
    public func shutdown() {
        guard started.withLock({ $0 }) else { return }
        loop.beginStopping()
        running.wait()
    }

    /// Stops at once: jobs in flight are not waited for, and they and every job waiting for a retry
    /// go back to the inbox. Cuts a running ``shutdown()`` short; blocks until stopped.
    public func stopNow() {
        loop.stopNow()
        shutdown()
    }
}
