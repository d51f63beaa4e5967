// `imagepipe queue retry`: failed jobs back to wait; a queue directory's failed/ back to its inbox.
import ArgumentParser
import Foundation
import ImagePipe
import ImagePipeQueue

extension QueueCommand {
    struct Retry: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Put failed jobs (all, or those named) back to wait.",
            discussion: """
                PostgreSQL: jobs by ID (default: every failed job; an ID may also name a cancelled job), their \
                attempts and errors cleared. Queue directory: jobs in failed/ by path relative to it (a folder \
                stands for every job under it; default: all), moved back to the inbox with their error records \
                removed, as `imagepipe retry` does. Exit status 1 when an ID or path matches no job to retry.
                """)

        @Argument(help: QueueCommand.queueHelp)
        var queue: String

        @Argument(help: "Job IDs (PostgreSQL) or paths relative to failed/ (a queue directory); default: every failed job.")
        var jobs: [String] = []

        func run() async throws {
            try AdminReport.print(try await QueueDrivers.open(queue).retry(jobs))
        }
    }
}
