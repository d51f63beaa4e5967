// `imagepipe watch`: a long-running worker on a queue directory or a PostgreSQL queue, stopped gracefully by SIGTERM, SIGINT or SIGHUP.
import ArgumentParser
import Foundation
import ImagePipe
import ImagePipeMonitoring
import ImagePipeRemoteStorage
import ImagePipeQueue
import Logging
import ServiceLifecycle

struct WatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Process originals delivered into a queue directory or queued in PostgreSQL, until stopped.",
        discussion: """
            QUEUE is a directory, or postgres://USER@HOST:PORT/DATABASE?queue=NAME (default queue: images; \
            sslmode=disable, prefer, require or verify-full). The password comes from PGPASSWORD or ~/.pgpass \
            (better than the URL, which other users can see in the process list).
            Layout under a queue directory (created when missing): inbox/ (deliveries), processing/ (claimed jobs, \
            one area per worker), done/ (originals with NAME.json), failed/ (originals with NAME.error.json).
            Deliver by writing elsewhere (or under a name starting with '.') and renaming into inbox/. Names \
            starting with '.' or ending in .part, .tmp or .crdownload are ignored.
            SIGTERM, SIGINT or SIGHUP stops claiming, lets jobs in flight finish within --shutdown-timeout, \
            returns the rest to the queue (a directory's inbox, or waiting in PostgreSQL) and exits 0; a second \
            SIGTERM or SIGINT returns every job at once. A stop while the queue is still being opened (a database \
            that cannot be reached yet) exits 0 at once. Symbolic links, FIFOs and other files that are not \
            regular files go to failed/.
            """)

    @Argument(help: ArgumentHelp("The queue: a directory, or postgres://USER@HOST:PORT/DATABASE?queue=NAME.", valueName: "queue"))
    var queue: String

    @OptionGroup var options: JobOptions

    @OptionGroup var service: ServiceOptions

    @OptionGroup var notify: NotifyOptions

    @Option(name: .customLong("max-attempts"), help: "Attempts per job before a transient failure is final.")
    var maxAttempts: Int = 5

    @Option(
        name: .customLong("retry-delay"), help: "Backoff ceiling in seconds after the first failure; doubles each time, up to 60 s, with full jitter."
    )
    var retryDelay: Double = 1

    @Option(name: .customLong("shutdown-timeout"), help: "Seconds jobs in flight may take to finish after SIGTERM, SIGINT or SIGHUP.")
    var shutdownTimeout: Double = 30

    @Option(name: .customLong("rescan-interval"), help: "Seconds between safety-net rescans of the inbox.")
    var rescanInterval: Double = 5

    @Option(name: .customLong("status-interval"), help: "Seconds between status lines (0: none).")
    var statusInterval: Double = 30

    @Option(
        name: .customLong("quiet-period"),
        help:
            "Seconds another user's file written into the inbox must stay unchanged before it is taken, when its writers cannot be seen (no CAP_LEASE)."
    )
    var quietPeriod: Double = 10

    @Flag(
        name: .customLong("exit-when-empty"),
        help: ArgumentHelp(
            "Exit (0) once this worker holds no job and nothing is due within a minute: work off a backlog, then stop. "
                + "Jobs of a worker that died are taken back and done first (within a lease); jobs of live workers stay "
                + "theirs; jobs queued for later stay waiting."))
    var exitWhenEmpty = false

    @Option(
        name: .customLong("lease"), help: "PostgreSQL: seconds a claimed job stays this worker's without a heartbeat (renewed every third of it).")
    var lease: Double = 30

    @Option(name: .customLong("retention"), help: "PostgreSQL: days done, failed and cancelled jobs are kept before workers delete them.")
    var retentionDays: Double = 7

    @Option(
        name: .customLong("keep-done"),
        help: ArgumentHelp(
            "Queue directory: delete jobs from done/ (originals and records) once they finished this long ago: 90s, 30m, 12h, 7d; "
                + "a bare number is days (default: keep them).", valueName: "age"),
        transform: { try TimeArgument.age($0, option: "--keep-done") })
    var keepDone: Duration?

    func validate() throws {
        guard maxAttempts >= 1 else { throw ValidationError("--max-attempts must be at least 1") }
        guard retryDelay >= 0, shutdownTimeout >= 0, statusInterval >= 0, quietPeriod >= 0 else {
            throw ValidationError("--retry-delay, --shutdown-timeout, --status-interval and --quiet-period cannot be negative")
        }
        guard rescanInterval > 0 else { throw ValidationError("--rescan-interval must be positive") }
        guard lease >= 1 else { throw ValidationError("--lease must be at least 1 second") }
        guard retentionDays >= 0 else { throw ValidationError("--retention cannot be negative") }
        // Options only some kinds of queue take: said before anything runs (no logging yet, nothing made).
        do throws(ImagePipeError) {
            try QueueDrivers.open(queue, creating: true, logger: Logger(label: "imagepipe")).checkWorkerOptions(keepingDone: keepDone)
        } catch {
            throw ValidationError(error.reason)
        }
    }

    func run() async throws {
        let logger = CompositionRoot.bootstrapLogging(level: options.logLevel, format: service.logFormat)
        // Metrics go to Prometheus only when asked, and the backend must be in place before the first
        // metric is made; without it, swift-metrics records nothing at no cost.
        let jobMetrics = service.address.map { _ in
            _ = Monitoring.bootstrapMetrics()
            return JobMetrics()
        }
        // Jobs from PostgreSQL may name objects in S3 or Supabase: read them with whichever of the two
        // the environment has credentials for (a job naming the other fails with the reason).
        // Setting up reads files and asks the destination (a probe, maybe over HTTP): blocking work,
        // done off the cooperative pool.
        // libcurl's global start reads OpenSSL's configuration: blocking, off the pool.
        let tracer = try await BlockingIO.run { () throws(ImagePipeError) in try CompositionRoot.tracer(service, logger: logger) }
        let driver = try QueueDrivers.open(queue, creating: true, logger: logger)
        let (handler, pipeline, jobs, notifier, companions) = try await BlockingIO.run { () throws(ImagePipeError) in
            // Options that do not apply to this kind of queue are refused before anything is set up.
            let companions = try driver.companions(keepingDone: keepDone)
            let handler = try CompositionRoot.fileHandler(
                options, sources: driver.takesObjectSources ? StorageFactory.configuredSourceSchemes(options.storage) : [],
                tracer: tracer, logger: logger)
            // A wrong destination stops the worker here, not after every job used up its attempts;
            // one that goes away later is retried like any storage failure.
            try handler.storage.probe()
            let notifier = try CompositionRoot.notifier(notify, tracer: tracer, logger: logger)
            let settings = QueueSettings(
                rescanInterval: .seconds(rescanInterval), quietPeriod: .seconds(quietPeriod), lease: .seconds(lease),
                retention: .seconds(retentionDays * 86_400), notifies: notify.notifyURL != nil)
            return (handler, CompositionRoot.pipeline(handler, options), try driver.worker(settings), notifier, companions)
        }
        let retry = RetryPolicy(maxAttempts: maxAttempts, baseDelay: .seconds(retryDelay))
        let worker = WorkerLoop(
            queue: jobs, pipeline: pipeline,
            configuration: .init(
                retry: retry, statusInterval: .seconds(statusInterval), exitWhenEmpty: exitWhenEmpty,
                shutdownTimeout: .seconds(shutdownTimeout)),
            observer: jobMetrics, notifier: notifier, logger: logger)
        var monitoring: Monitoring?
        if let address = service.address {
            monitoring = try await CompositionRoot.monitoring(
                at: address, worker: worker, storage: handler.storage,
                interval: .seconds(service.checkInterval), logger: logger)
        }
        logger.info("storing", metadata: ["destination": "\(handler.storage.location)"])
        // Services stop in reverse order: the worker drains first while the monitoring endpoints
        // still answer (/readyz with 503), then they close. A worker that ends by itself (the queue
        // is empty with --exit-when-empty) stops the rest gracefully.
        // The group owns the deadlines: jobs in flight get --shutdown-timeout after the first
        // signal, then the worker is cancelled, which gives back what still runs.
        // The queue's companions (the cleaner of done/) stop after the worker: a graceful shutdown goes in reverse order.
        let services =
            (tracer.map { [ServiceGroupConfiguration.ServiceConfiguration(service: TraceExportService(tracer: $0))] } ?? [])
            + (monitoring?.services ?? []).map { ServiceGroupConfiguration.ServiceConfiguration(service: $0) }
            + companions.map { ServiceGroupConfiguration.ServiceConfiguration(service: $0) }
            + [.init(service: worker, successTerminationBehavior: .gracefullyShutdownGroup)]
        var configuration = ServiceGroupConfiguration(services: services, logger: logger)
        configuration.maximumGracefulShutdownDuration = .seconds(shutdownTimeout)
        configuration.maximumCancellationDuration = StopSignals.cancellationGrace
        let group = ServiceGroup(configuration: configuration)
        let signals = StopSignals(logger: logger, stage: .running, graceful: "stopping gracefully")
        signals.govern(group) { worker.stopNow() }
        do {
            try await group.run()
        } catch  where signals.received > 0 {
            // A stop was asked for and the worker has given every job back: that is a clean end.
            logger.debug("the service group ended with an error after a stop request", metadata: ["error": "\(error)"])
        }
        withExtendedLifetime(signals) {}
        // The worker has stopped and given back every job. A job abandoned at the shutdown timeout may
        // still hold a thread (a read that never returns, a decode under way), and exit(3)'s clean-up
        // of libraries can wait for such threads: end the process here instead.
        _exit(0)
    }
}
