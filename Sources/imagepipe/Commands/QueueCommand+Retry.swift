// `imagepipe queue retry`: discarded jobs back to wait; a queue directory's failed/ back to its inbox.
import ArgumentParser
import Foundation
import ImagePipe
import ImagePipePostgres
import ImagePipeQueue

extension QueueCommand {
    struct Retry: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Put discarded jobs (all, or those named) back to wait.",
            discussion: """
                PostgreSQL: jobs by ID (default: every discarded job; an ID may also name a cancelled job), their \
                attempts and errors cleared. Queue directory: jobs in failed/ by path relative to it (a folder \
                stands for every job under it; default: all), moved back to the inbox with their error records \
                removed, as `imagepipe retry` does. Exit status 1 when an ID or path matches no job to retry.
                """)

        @Argument(help: QueueCommand.queueHelp)
        var queue: String

        @Argument(help: "Job IDs (PostgreSQL) or paths relative to failed/ (a queue directory); default: every discarded job.")
        var jobs: [String] = []

        func run() async throws {
            switch try QueueTarget(queue) {
            case .directory(let directory):
                let paths = jobs
                try await BlockingIO.run { () throws in try RetryCommand.retry(paths, in: directory) }
            case .postgres(let location):
                var ids: [Int] = []
                for job in jobs {
                    guard let id = Int(job) else {
                        throw ImagePipeError.configuration("'\(job)' is not a job ID: a PostgreSQL queue's jobs are numbered")
                    }
                    ids.append(id)
                }
                let named = ids.isEmpty ? nil : ids
                let count = try await QueueTarget.withDatabase(location) { database throws(ImagePipeError) in
                    try await database.retryDiscarded(ids: named)
                }
                FileHandle.standardError.write(Data("imagepipe: put \(count) discarded job(s) back to wait\n".utf8))
                if let named, count < named.count { throw ExitCode(1) }
            }
        }
    }
}
