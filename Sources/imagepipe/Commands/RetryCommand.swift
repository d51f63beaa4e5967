// `imagepipe retry`: failed jobs back into the inbox of a queue directory, safely while workers run.
import ArgumentParser
import Foundation
import ImagePipe
import ImagePipePostgres
import ImagePipeQueue

struct RetryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retry",
        abstract: "Move failed jobs of a queue directory back to its inbox.",
        discussion: """
            Moves every job in QUEUE_DIR/failed/ (or those at the given paths, relative to failed/; a folder \
            stands for every job under it) back to the inbox and removes its error record, printing each move. \
            Safe while workers run. An inbox file of the same name is never replaced: the job gets a numbered \
            name beside it. Exit status: 0 when every job was moved, 1 when a path matched nothing or a move \
            failed, 2 when QUEUE_DIR is not a queue directory. `imagepipe queue retry` does the same, and \
            also takes a PostgreSQL queue.
            """)

    @Argument(help: "The queue directory.")
    var queueDirectory: String

    @Argument(help: "Failed jobs to retry, relative to failed/ (default: all).")
    var paths: [String] = []

    func run() throws {
        if QueueKind.isPostgres(queueDirectory) {
            throw ImagePipeError.configuration(
                "imagepipe retry takes a queue directory; for a PostgreSQL queue use `imagepipe queue retry postgres://... [ID ...]`")
        }
        let root = LocalPath.absolute(queueDirectory)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: root + "/failed", isDirectory: &isDirectory), isDirectory.boolValue else {
            throw ImagePipeError.configuration("\(root) is not a queue directory: it has no failed/ folder")
        }
        try Self.retry(paths, in: try QueueDirectory(root: root))
    }

    /// Moves the failed jobs at `paths` (all when empty) back to the inbox, printing each move;
    /// exits 1 when a path matched nothing or a move failed.
    static func retry(_ paths: [String], in queue: QueueDirectory) throws {
        let failed = FailedJobs(queue: queue)
        let (jobs, unknown) = paths.isEmpty ? (failed.list(), []) : failed.select(paths)
        for path in unknown { printError("no failed job at \(path)") }

        var problems = unknown.count
        for outcome in try failed.retry(jobs) {
            switch outcome {
            case .returned(let from, let to):
                print("\(from) -> \(to)")
            case .failed(let reason):
                printError(reason)
                problems += 1
            }
        }
        let moved = jobs.count - (problems - unknown.count)
        printError("returned \(moved) job(s) to the inbox")
        if problems > 0 { throw ExitCode(1) }
    }

    private static func printError(_ line: String) {
        FileHandle.standardError.write(Data("imagepipe: \(line)\n".utf8))
    }
}
