// `imagepipe enqueue`: add sources to a PostgreSQL queue, from the command line or standard input, in batches.
import ArgumentParser
import Foundation
import ImagePipe
import ImagePipeQueue

struct EnqueueCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "enqueue",
        abstract: "Add sources to a PostgreSQL queue.",
        discussion: """
            Each SOURCE is a local path or an object URL (s3://BUCKET/KEY, supabase://BUCKET/KEY), stored as \
            given; '-' reads one source per line from standard input (LF or CRLF; blank lines are ignored, and \
            a line with a NUL byte or invalid UTF-8 stops the command, naming it). Sources are added in batches of \
            \(EnqueueCommand.batchSize) (one statement each). Prints each new job's ID and source, tab-separated. \
            --priority orders claims (lower first, then the earliest due); --run-at delays the jobs; \
            --focus X,Y stores a focal point with each job (the point cover crops keep); --traceparent (or \
            TRACEPARENT in the environment) stores the caller's W3C trace context, which each job's trace continues. \
            The queue's schema is created when missing. The password comes from PGPASSWORD or ~/.pgpass.
            """)

    /// Sources per statement.
    static let batchSize = 1000

    @Argument(help: ArgumentHelp("postgres://USER@HOST:PORT/DATABASE?queue=NAME", valueName: "queue"))
    var queue: String

    @Argument(help: ArgumentHelp("Local paths or object URLs; '-' for one per line on standard input.", valueName: "source"))
    var sources: [String] = []

    @Flag(name: .long, help: "Add no job for a source that is already waiting or running.")
    var unique = false

    // Unconditional: a negative priority (`--priority -1`) is a value, not an option.
    @Option(name: .long, parsing: .unconditional, help: "Claim order: jobs with a lower number are claimed first (as in River and Oban).")
    var priority = 0

    @Option(
        name: .customLong("run-at"),
        help: ArgumentHelp("When the jobs are due: +DURATION (+90s, +30m, +2h, +1d) or a time (2025-06-01T09:00:00Z).", valueName: "time"),
        transform: { try TimeArgument.runAt($0) })
    var runAt: JobRunAt = .now

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The point cover crops keep, as fractions of the width and height (0,0 top left): stored in the jobs' options.",
            valueName: "x,y"),
        transform: { text in
            guard let point = FocalPoint(parsing: text) else {
                throw ValidationError("--focus '\(text)' must be X,Y: two fractions from 0 to 1, as 0.3,0.7")
            }
            return point
        })
    var focus: FocalPoint?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The W3C trace context of the request that queued the jobs (00-TRACEID-SPANID-FLAGS; default: TRACEPARENT): "
                + "each job's trace continues it.",
            valueName: "traceparent"),
        transform: { text in
            guard let parent = TraceParent(text) else {
                throw ValidationError("--traceparent '\(text)' is not a W3C traceparent: 00-<32 hex>-<16 hex>-<2 hex>, lower case")
            }
            return parent
        })
    var traceparent: TraceParent?

    func validate() throws {
        guard !sources.isEmpty else { throw ValidationError("name at least one source, or '-' for standard input") }
        guard Int(Int32.min)...Int(Int32.max) ~= priority else {
            throw ValidationError("--priority \(priority) is out of range: from \(Int32.min) to \(Int32.max)")
        }
    }

    func run() async throws {
        let driver = try QueueDrivers.open(queue, creating: true)
        // The caller's context, else the environment's (a CI job or a shell script that is itself traced).
        let parent = traceparent ?? ProcessInfo.processInfo.environment["TRACEPARENT"].flatMap(TraceParent.init)
        let request = EnqueueRequest(
            unique: unique, priority: priority, runAt: runAt, options: QueuedJobOptions(focus: focus, traceparent: parent))
        let sources = self.sources
        // One session for every batch; a queue that takes no enqueue refuses before anything is read.
        let (added, skipped) = try await driver.enqueue(request) { session throws(ImagePipeError) in
            var added = 0, skipped = 0
            var batch: [String] = []
            func flush() async throws(ImagePipeError) {
                guard !batch.isEmpty else { return }
                let ids = try await session.add(batch)
                var lines = ""
                for (source, id) in zip(batch, ids) {
                    if let id {
                        lines += "\(id)\t\(source)\n"
                        added += 1
                    } else {
                        skipped += 1
                    }
                }
                FileHandle.standardOutput.write(Data(lines.utf8))
                batch.removeAll(keepingCapacity: true)
            }
            for source in sources {
                if source == "-" {
                    // The list reader `batch --from` uses, a batch at a time, off the cooperative pool.
                    let list = try SourceList(path: "-")
                    while true {
                        let lines = try await BlockingIO.run { () throws(ImagePipeError) in try list.next(upTo: Self.batchSize) }
                        if lines.isEmpty { break }
                        for line in lines {
                            batch.append(line)
                            if batch.count == Self.batchSize { try await flush() }
                        }
                    }
                } else {
                    batch.append(source)
                    if batch.count == Self.batchSize { try await flush() }
                }
            }
            try await flush()
            return (added, skipped)
        }
        let note = unique ? ", \(skipped) already waiting or running" : ""
        FileHandle.standardError.write(Data("imagepipe: added \(added) job(s) to \(driver.displayName)\(note)\n".utf8))
    }
}
