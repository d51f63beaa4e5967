// `imagepipe batch`: every image under a folder into variants, a manifest and a summary.
import ArgumentParser
import Foundation
import ImagePipe
import Synchronization

struct BatchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "batch",
        abstract: "Turn every image under a folder into web variants and store them.",
        discussion: """
            Exit status: 0 when every image is done, 1 when any failed, 2 for usage or configuration errors.
            Originals are only read, never modified, moved or deleted.
            """)

    @Argument(help: "The folder of originals (searched recursively; hidden files are skipped).")
    var source: String

    @Option(name: .long, help: ArgumentHelp("Write one JSON line per source to this file ('-' for standard output).", valueName: "file"))
    var manifest: String?

    @OptionGroup var options: JobOptions

    @Flag(name: .long, help: "Redo sources whose outputs are all in place from the same original (skipped otherwise).")
    var force = false

    @Flag(name: .customLong("dry-run"), help: "List each source and the keys it would write (or why not), touching nothing.")
    var dryRun = false

    func run() throws {
        let logger = CompositionRoot.bootstrapLogging(level: options.logLevel)
        let handler = try CompositionRoot.fileHandler(options, force: force, logger: logger)
        let pipeline = CompositionRoot.pipeline(handler, options)
        let writer = try manifest.map { (path) throws(ImagePipeError) in try ManifestWriter(path: path) }

        // A destination inside the source tree must not be read back as sources.
        let excluded = [handler.storage.location, manifest.map { FilePath.absolute($0) }].compactMap { $0 }
        let runner = BatchRunner(scanner: SourceScanner(root: source, excluding: excluded), pipeline: pipeline)
        if dryRun {
            try runner.plan { inspected in print(DryRunLine(inspected).text) }
            return
        }
        let progress = ProgressLine()
        let interruption = Interruption(logger: logger)

        let summary = try runner.run(
            onStart: { scan in
                for (path, reason) in scan.unreadable {
                    logger.warning("cannot list directory \(path.isEmpty ? "." : path): \(reason)")
                }
                logger.debug("found \(scan.jobs.count) images, \(scan.skipped.count) other files")
            },
            shouldStop: { interruption.isRequested },
            onResult: { result, state in
                writer?.append(result)
                if result.status == .failed {
                    logger.error("failed \(result.source): \(result.error ?? "unknown error")")
                } else if result.status == .skipped {
                    logger.info("skipped \(result.source): \(result.reason ?? "")")
                } else {
                    logger.debug("done \(result.source) in \(result.timings.totalMs) ms")
                }
                progress.update(finished: state.finished, total: state.total, elapsed: state.elapsed)
            })
        progress.clear()
        writer?.close()
        for line in summary.lines { Console.shared.line("imagepipe: " + line) }
        if summary.interrupted { throw ExitCode(130) }
        if summary.failed > 0 { throw ExitCode(1) }
    }
}

/// The live `done/total, images/s, ETA` line, drawn only on a terminal, at most ten times a second.
final class ProgressLine: Sendable {
    private let lastDraw = Mutex<ContinuousClock.Instant?>(nil)

    func update(finished: Int, total: Int, elapsed: Duration) {
        guard Console.shared.isTerminal else { return }
        let now = ContinuousClock.now
        let due = lastDraw.withLock { last in
            if let last, now - last < .milliseconds(100), finished < total { return false }
            last = now
            return true
        }
        guard due else { return }
        let seconds = elapsed.milliseconds / 1000
        let rate = seconds > 0 ? Double(finished) / seconds : 0
        let eta = rate > 0 ? Int((Double(total - finished) / rate).rounded()) : 0
        Console.shared.setStatus(String(format: "[%d/%d] %.1f images/s, ETA %d:%02d", finished, total, rate, eta / 60, eta % 60))
    }

    func clear() { Console.shared.setStatus(nil) }
}
