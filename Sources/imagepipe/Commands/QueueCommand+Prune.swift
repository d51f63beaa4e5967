// `imagepipe queue prune`: delete finished jobs past an age: a PostgreSQL queue's rows, a queue directory's done/ (failed/ when asked).
import ArgumentParser
import Foundation
import ImagePipe
import ImagePipePostgres
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
            let target = try QueueTarget(queue)
            let age = olderThan
            let count: Int
            switch target {
            case .directory(let directory):
                let includeFailed = self.includeFailed
                let outcome = await BlockingIO.run { QueueRetention(queue: directory).prune(olderThan: age, includingFailed: includeFailed) }
                for problem in outcome.problems { FileHandle.standardError.write(Data("imagepipe: \(problem)\n".utf8)) }
                if !outcome.problems.isEmpty {
                    FileHandle.standardError.write(Data("imagepipe: deleted \(outcome.deleted.count) finished job(s)\n".utf8))
                    throw ExitCode(1)
                }
                count = outcome.deleted.count
            case .postgres(let location):
                guard !includeFailed else {
                    throw target.unsupported("--include-failed", "prune deletes its done, failed and cancelled jobs alike")
                }
                count = try await QueueTarget.withDatabase(location) { database throws(ImagePipeError) in
                    await database.prune(queue: location.queue, olderThan: age)
                }
            }
            FileHandle.standardError.write(Data("imagepipe: deleted \(count) finished job(s)\n".utf8))
        }
    }
}
