// `imagepipe queue retry`: failed jobs back to wait; a queue directory's failed/ back to its inbox.
import ArgumentParser
import Foundation
import ImagePipe
import ImagePipePostgres
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
                let back = try await QueueTarget.withDatabase(location) { database throws(ImagePipeError) in
                    try await database.retryFailed(ids: named)
                }
                // Failed and cancelled jobs both go back: the message names neither alone.
                var message = "imagepipe: put \(back.count) job(s) back to wait (failed or cancelled before)\n"
                // Each ID asked for that did not go back is named: missing, or neither failed nor cancelled.
                let left = (named ?? []).filter { !back.contains($0) }
                for id in left {
                    message +=
                        "imagepipe: job \(id) was not put back: no such job in the queue \(location.queue), or it is not failed or cancelled\n"
                }
                FileHandle.standardError.write(Data(message.utf8))
                if !left.isEmpty { throw ExitCode(1) }
            }
        }
    }
}
