// `imagepipe retry`: failed jobs back into the inbox of a queue directory, safely while workers run.
import ArgumentParser
import Foundation
import ImagePipe
import ImagePipeQueue

struct RetryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retry",
        abstract: "Put a queue's failed jobs back to wait (a queue directory's back into its inbox).",
        discussion: """
            Moves every job in QUEUE_DIR/failed/ (or those at the given paths, relative to failed/; a folder \
            stands for every job under it) back to the inbox and removes its error record, printing each move. \
            Safe while workers run. An inbox file of the same name is never replaced: the job gets a numbered \
            name beside it. Exit status: 0 when every job was moved, 1 when a path matched nothing or a move \
            failed, 2 when QUEUE_DIR is not a queue directory. It is `imagepipe queue retry`, which takes any queue.
            """)

    @Argument(help: "The queue: a queue directory, or postgres://USER@HOST:PORT/DATABASE?queue=NAME.")
    var queueDirectory: String

    @Argument(help: "Failed jobs to retry: paths relative to failed/ (a queue directory) or job IDs (PostgreSQL); default: all.")
    var paths: [String] = []

    func run() async throws {
        try AdminReport.print(try await QueueDrivers.open(queueDirectory).retry(paths))
    }
}
