// `imagepipe queue prune`: delete finished jobs past an age: a PostgreSQL queue's rows, a queue directory's done/ (failed/ when asked).
import ArgumentParser
import Foundation
import ImagePipe
import ImagePipeQueue

extension QueueCommand {
    struct Prune: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete finished jobs older than --older-than.",
            discussion: """
                PostgreSQL: done, failed and cancelled jobs (workers also do this after --retention days). Queue \
                directory: the originals in done/ with their records (what `watch --keep-done` does as it runs), and \
                those in failed/ only with --include-failed; the inbox and running jobs never. A job's age counts \
                from when it finished. Safe while workers run.
                """)

        @Argument(help: QueueCommand.queueHelp)
        var queue: String

        @Option(
            name: .customLong("older-than"),
            help: ArgumentHelp("Age of the jobs deleted: 90s, 30m, 12h, 7d; a bare number is days.", valueName: "age"),
            transform: { try TimeArgument.age($0, option: "--older-than") })
        var olderThan: Duration = .seconds(7 * 86_400)

        @Flag(name: .customLong("include-failed"), help: "Queue directory: delete old jobs of failed/ too.")
        var includeFailed = false

        func run() async throws {
            try AdminReport.print(try await QueueDrivers.open(queue).prune(olderThan: olderThan, includingFailed: includeFailed))
        }
    }
}
