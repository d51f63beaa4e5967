// `imagepipe batch`: every image of some folders, files or a list into variants, a manifest and a summary.
import ArgumentParser
import Foundation
import ImagePipe
import ImagePipeMonitoring
import ImagePipeRemoteStorage
import Logging
import ServiceLifecycle
import Synchronization

struct BatchCommand: AsyncParsableCommand {
    /// How long notifications still retrying may go on once a batch is interrupted.
    static let notifyGraceWhenInterrupted = Duration.seconds(10)

    static let configuration = CommandConfiguration(
        commandName: "batch",
        abstract: "Turn every image of some folders or files into web variants and store them.",
        discussion: """
            A folder's images go by their path relative to it; a file by its path as given when that is \
            relative (without '..'), else by its name. s3://BUCKET/PREFIX and supabase://BUCKET/PREFIX take \
            every object under the prefix, by its key relative to it (one object when the URL names one), \
            with the credentials and --endpoint/--region a destination of that kind uses. A source that does \
            not exist stops the batch before anything is created; a listed path that does not exist fails as \
            one source.
            Exit status: 0 when every image is done (also when none was found), 1 when any failed, 2 for \
            usage or configuration errors. Originals are only read, never modified, moved or deleted.
            """)

    @Argument(
        help: ArgumentHelp(
            "Folders of originals (searched recursively; hidden files are skipped), image files, "
                + "and s3:// or supabase:// folders (prefixes) and objects.",
            valueName: "source"))
    var sources: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Also take the folders and files listed in this file, one path per line, LF or CRLF ('-' for standard input).",
            valueName: "file"))
    var from: String?

    @Option(name: .long, help: ArgumentHelp("Write one JSON line per source to this file ('-' for standard output).", valueName: "file"))
    var manifest: String?

    @OptionGroup var options: JobOptions

    @OptionGroup var service: ServiceOptions

    @OptionGroup var notify: NotifyOptions

    @Flag(name: .long, help: "Redo sources whose outputs are all in place from the same original (skipped otherwise).")
    var force = false

    @Flag(
        name: .customLong("dry-run"),
        help:
            "List each source and the keys it would write, or why it would be skipped or fail (from its header and end, not decoded), touching nothing."
    )
    var dryRun = false

    @Option(
        name: .customLong("max-source-bytes"),
        help: ArgumentHelp(
            "Refuse sources in object storage larger than this many bytes, before downloading them (default 256 MiB).",
            valueName: "bytes"))
    var maxSourceBytesGiven: Int?

    /// `--max-source-bytes`, or its default. The help says the default in MiB; an option with an
    /// initial value would have the parser say it again, in bytes.
    var maxSourceBytes: Int { maxSourceBytesGiven ?? 256 << 20 }

    func validate() throws {
        guard !sources.isEmpty || from != nil else { throw ValidationError("give at least one source folder or file, or --from") }
        guard maxSourceBytes >= 1 else { throw ValidationError("--max-source-bytes must be positive") }
    }

    func run() async throws {
        let logger = CompositionRoot.bootstrapLogging(level: options.logLevel, format: service.logFormat)
        // Until images start, a stop signal (also while a list is read from standard input) ends the
        // batch at once: nothing has started that it could let finish.
        let signals = StopSignals(logger: logger, stage: .starting, graceful: "finishing the images in flight, starting no more")
        // The endpoints answer for the whole run, the reading of a --from list included; the
        // metrics backend is in place before the first metric is made.
        let progressState = BatchProgressState()
        let jobMetrics = service.address.map { _ in
            _ = Monitoring.bootstrapMetrics()
            return JobMetrics()
        }
        var monitoring: Monitoring?
        if let address = service.address {
            monitoring = try await CompositionRoot.monitoring(
                at: address, batch: progressState, stopRequested: { signals.received > 0 },
                interval: .seconds(service.checkInterval), logger: logger)
        }
        // The lifecycle `watch` has: the batch is the last service of a group, after the monitoring
        // endpoints. A graceful shutdown goes in reverse order, so the batch finishes its images in
        // flight while the endpoints still answer, then they close, however the batch ended (its
        // error is the group's, once the endpoints are closed). A graceful stop has no deadline: the
        // images in flight finish.
        let work = BatchService(command: self, logger: logger, signals: signals, progressState: progressState, jobMetrics: jobMetrics)
        let services =
            (monitoring?.services ?? []).map { ServiceGroupConfiguration.ServiceConfiguration(service: $0) }
            + [.init(service: work, successTerminationBehavior: .gracefullyShutdownGroup, failureTerminationBehavior: .gracefullyShutdownGroup)]
        var configuration = ServiceGroupConfiguration(services: services, logger: logger)
        configuration.maximumCancellationDuration = StopSignals.cancellationGrace
        let group = ServiceGroup(configuration: configuration)
        signals.govern(group) {
            logger.warning("stopped at once: images in flight were not finished; run the batch again to resume")
            // Every manifest line went out as it was written; exit's clean-up of libraries would
            // race the images still being made.
            _exit(130)
        }
        try await group.run()
    }

    /// The batch itself, once the monitoring endpoints (if any) answer.
    func runBatch(
        logger: Logger, signals: StopSignals, progressState: BatchProgressState, jobMetrics: JobMetrics?
    ) async throws {
        // Setting up reads files (the list, the sources, credentials): blocking I/O, off the
        // cooperative pool, as is the dry run's reading and hashing.
        // libcurl's global start reads OpenSSL's configuration: blocking, off the pool.
        let tracer = try await BlockingIO.run { () throws(ImagePipeError) in try CompositionRoot.tracer(service, logger: logger) }
        let parent = tracer == nil ? nil : CompositionRoot.environmentTraceParent(logger: logger)
        let runner = try await BlockingIO.run { () throws(ImagePipeError) in
            var runner = try prepare(tracer: tracer, logger: logger)
            runner.traceParent = parent
            return runner
        }
        if dryRun {
            let counts = try await BlockingIO.run { () throws(ImagePipeError) -> [DryRunLine.Action: Int] in
                var counts: [DryRunLine.Action: Int] = [:]
                try runner.plan { inspected in
                    let line = DryRunLine(inspected)
                    counts[line.action, default: 0] += 1
                    print(line.text)
                }
                return counts
            }
            Console.shared.line("imagepipe: " + DryRunLine.Action.summary(counts))
            if counts[.fail, default: 0] > 0 { throw ExitCode(1) }
            return
        }

        // A notify URL that cannot work, or no secret to sign with, stops the run before it starts.
        let notifier = try CompositionRoot.notifier(notify, tracer: tracer, logger: logger)
        let started = ContinuousClock.now
        // Listing and the destination's check come first: a run that stops here leaves no trace,
        // not even an emptied manifest.
        let manifest = self.manifest
        let (scan, writer) = try await BlockingIO.run { () throws(ImagePipeError) in
            let scan = try runner.start()
            let writer = try manifest.map { (path) throws(ImagePipeError) in
                path == "-" ? ManifestWriter(standardOutputThrough: Console.shared.output) : try ManifestWriter(path: path)
            }
            return (scan, writer)
        }
        for (path, reason) in scan.unreadable {
            logger.warning("cannot list a directory", metadata: ["path": "\(path)", "error": "\(reason)"])
        }
        // Written off the cooperative pool, as every manifest line is (the results' own lines come
        // on the batch's serial result queue).
        await BlockingIO.run { for skipped in scan.skipped { writer?.append(skipped) } }
        for skipped in scan.skipped {
            jobMetrics?.jobFinished(skipped)
            logger.info("skipped", metadata: skipped.logMetadata)
            await notifier?.send(JobNotice(event: .skipped, job: skipped.source, result: skipped))
        }
        // Hidden names are routine (`.DS_Store`, a put's temporary file): the summary counts them,
        // and the debug log names each, so one a stranger chose is never left out unsaid.
        for name in scan.hidden {
            logger.debug("left out a hidden name", metadata: ["source": "\(name)"])
        }
        logger.debug(
            "found the sources",
            metadata: [
                "files": .stringConvertible(scan.jobs.count), "others": .stringConvertible(scan.skipped.count),
                "hidden": .stringConvertible(scan.hidden.count),
            ])
        progressState.started(total: scan.jobs.count, pipeline: runner.pipeline)

        // A failure or skip is logged with the file's path beside its name: the name is relative
        // to its folder (`notes.jpg`), which does not say which folder when several were given.
        let paths = Self.pathsByName(scan.jobs)
        let progress = ProgressLine()
        // Images start now: a stop signal from here on lets the ones in flight finish.
        signals.workStarted()
        let batch = Task {
            await runner.run(scan, startedAt: started) { result, state in
                writer?.append(result)
                // Recorded first, then told: a notification never runs ahead of the manifest line.
                // This is the batch's serial result queue, which may wait for room in the notifier.
                notifier?.sendWaiting(JobNotice(event: .init(result.status), job: result.source, result: result))
                jobMetrics?.jobFinished(result)
                progressState.finishedOne()
                var metadata = result.logMetadata
                if result.status != .done, let path = paths[result.source] { metadata["path"] = .string(path) }
                switch result.status {
                case .failed: logger.error("failed", metadata: metadata)
                // Up to date is what a re-run expects of most images: the summary counts them, and
                // a line each would bury the few that were not.
                case .skipped where result.skipCode == .upToDate: logger.debug("skipped", metadata: result.logMetadata)
                case .skipped: logger.info("skipped", metadata: metadata)
                case .done: logger.debug("done", metadata: result.logMetadata)
                }
                progress.update(state)
            }
        }
        // From now on the first stop signal is the group's graceful shutdown: the images in flight
        // finish and no more start; their notifications (and those still retrying) get a short while
        // more, not the whole deadline each, while a receiver is down. (A shutdown asked for before
        // the handler below is in place reaches it as soon as it is.)
        let summary = await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                await batch.value
            } onGracefulShutdown: {
                batch.cancel()
                notifier?.hurry(within: Self.notifyGraceWhenInterrupted)
            }
        } onCancel: {
            batch.cancel()
        }
        progress.clear()
        await BlockingIO.run { writer?.close() }
        // Every notification gets its deadline; the run ends when the last is delivered or given up.
        let notifyLimit = summary.interrupted ? Self.notifyGraceWhenInterrupted + notify.timeout : notify.deadline + notify.timeout
        _ = await BlockingIO.run { notifier?.finishWaiting(within: notifyLimit) }
        // The run's span and the notifications' last: sent now, within a few seconds at most.
        await CompositionRoot.flushTraces(tracer)
        // Known only now: whether a file is an image is decided by its first bytes as it is read.
        if summary.foundNoImage, !summary.interrupted { logger.warning("no images found") }
        if service.logFormat == .json {
            // Every line on standard error stays a JSON object: the summary is one more, with its figures as fields.
            logger.notice(
                "summary",
                metadata: [
                    "total": .stringConvertible(summary.total), "done": .stringConvertible(summary.done),
                    "failed": .stringConvertible(summary.failed), "skipped": .stringConvertible(summary.skipped),
                    "hidden": .stringConvertible(summary.hidden),
                    "input_bytes": .stringConvertible(summary.bytesIn), "output_bytes": .stringConvertible(summary.bytesOut),
                    "wall_ms": .stringConvertible(Int(summary.wallTime.milliseconds.rounded())),
                    "interrupted": .stringConvertible(summary.interrupted),
                    "not_started": .stringConvertible(summary.notStarted),
                ])
        } else {
            for line in summary.lines { Console.shared.line("imagepipe: " + line) }
        }
        if summary.interrupted { throw ExitCode(130) }
        if summary.failed > 0 || summary.notStarted > 0 { throw ExitCode(1) }
    }

    /// Reads the sources and checks them, then builds the handler and the runner. Blocking I/O.
    private func prepare(tracer: Tracer?, logger: Logger) throws(ImagePipeError) -> BatchRunner {
        // Sources are read and checked before the destination is created, so a typo creates nothing.
        let inputs =
            try sources.map { SourceScanner.Input($0) }
            + (from.map { (path) throws(ImagePipeError) in try Self.readList(path) } ?? [])
        try SourceScanner(inputs: inputs).check()
        // A batch's sources are a library: a photo found under its name with other bytes was edited.
        let handler = try CompositionRoot.fileHandler(
            options, force: force, updatesEditedOriginals: true, sources: inputs.map(\.path),
            maxSourceBytes: maxSourceBytes, tracer: tracer, logger: logger)
        let pipeline = CompositionRoot.pipeline(handler, options)
        // A destination inside the source tree must not be read back as sources.
        let excluded = [handler.storage.location, manifest.map { LocalPath.absolute($0) }].compactMap { $0 }
        let runner = BatchRunner(scanner: SourceScanner(inputs: inputs, excluding: excluded, sources: handler.sources), pipeline: pipeline)
        return runner
    }

    /// Each local file's path by the name its result goes by, where the two differ and the name
    /// is one file's only.
    static func pathsByName(_ jobs: [Job]) -> [String: String] {
        var paths: [String: String?] = [:]
        for job in jobs where job.object == nil && job.path != job.sourceName {
            paths[job.sourceName] = paths[job.sourceName] == nil ? job.path : .some(nil)
        }
        return paths.compactMapValues { $0 }
    }

    /// The paths of a `--from` list (see ``SourceList``: one a line, LF or CRLF, blank lines ignored).
    static func readList(_ path: String) throws(ImagePipeError) -> [SourceScanner.Input] {
        try SourceList.read(path).map { SourceScanner.Input($0, listed: true) }
    }
}

/// The live `[done/total] failed, images/s, ETA` line, drawn only on a terminal, at most ten times a second.
final class ProgressLine: Sendable {
    private let lastDraw = Mutex<ContinuousClock.Instant?>(nil)

    func update(_ progress: BatchRunner.Progress) {
        guard Console.shared.isTerminal else { return }
        let now = ContinuousClock.now
        let due = lastDraw.withLock { last in
            if let last, now - last < .milliseconds(100), progress.finished < progress.total { return false }
            last = now
            return true
        }
        guard due else { return }
        Console.shared.setStatus(progress.line)
    }

    func clear() { Console.shared.setStatus(nil) }
}

/// The batch as a service of its command's group (see `BatchCommand.run()`).
struct BatchService: Service, CustomStringConvertible {
    let command: BatchCommand
    let logger: Logger
    let signals: StopSignals
    let progressState: BatchProgressState
    let jobMetrics: JobMetrics?

    /// What the group's debug log calls it (not the whole command line).
    var description: String { "batch" }

    func run() async throws {
        try await command.runBatch(logger: logger, signals: signals, progressState: progressState, jobMetrics: jobMetrics)
    }
}
