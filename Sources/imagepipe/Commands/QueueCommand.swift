// `imagepipe queue status|retry|prune`: look after a PostgreSQL queue.
import ArgumentParser
import Foundation
import ImagePipe
import ImagePipePostgres

struct QueueCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "queue",
        abstract: "Look after a PostgreSQL queue: status, retry, prune.",
        subcommands: [Status.self, Retry.self, Prune.self])

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the jobs by state, how long the oldest due job has waited, and jobs finished per second over the last minute.")

        @Argument(help: ArgumentHelp("postgres://USER@HOST:PORT/DATABASE?queue=NAME", valueName: "queue"))
        var queue: String

        func run() async throws {
            let location = try PostgresLocation(parsing: queue)
            let status = try await QueueDatabase.run(location, logger: CompositionRoot.bootstrapLogging(level: "warning")) {
                database throws(ImagePipeError) in
                try await database.status()
            }
            print("queue \(location.queue)")
            for state in ["waiting", "running", "done", "discarded"] {
                print("\(state)\t\(status.counts[state] ?? 0)")
            }
            print("oldest_waiting_s\t\(status.oldestWaitingSeconds.map { String(format: "%.1f", $0) } ?? "-")")
            print("jobs_per_s\t\(String(format: "%.2f", status.finishedPerSecond))")
        }
    }

    struct Retry: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Put discarded jobs (all, or those with the given IDs) back to wait, their attempts and errors cleared.")

        @Argument(help: ArgumentHelp("postgres://USER@HOST:PORT/DATABASE?queue=NAME", valueName: "queue"))
        var queue: String

        @Argument(help: "Job IDs (default: every discarded job).")
        var ids: [Int] = []

        func run() async throws {
            let location = try PostgresLocation(parsing: queue)
            let ids = self.ids.isEmpty ? nil : self.ids
            let count = try await QueueDatabase.run(location, logger: CompositionRoot.bootstrapLogging(level: "warning")) {
                database throws(ImagePipeError) in
                try await database.retryDiscarded(ids: ids)
            }
            FileHandle.standardError.write(Data("imagepipe: put \(count) discarded job(s) back to wait\n".utf8))
            if let ids, count < ids.count { throw ExitCode(1) }
        }
    }

    struct Prune: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete done and discarded jobs that finished longer ago than the retention.")

        @Argument(help: ArgumentHelp("postgres://USER@HOST:PORT/DATABASE?queue=NAME", valueName: "queue"))
        var queue: String

        @Option(name: .customLong("older-than"), help: "Days a finished job is kept.")
        var days: Double = 7

        func validate() throws {
            guard days >= 0 else { throw ValidationError("--older-than cannot be negative") }
        }

        func run() async throws {
            let location = try PostgresLocation(parsing: queue)
            let age = Duration.seconds(days * 86_400)
            let count = try await QueueDatabase.run(location, logger: CompositionRoot.bootstrapLogging(level: "warning")) {
                database throws(ImagePipeError) in
                await database.prune(queue: location.queue, olderThan: age)
            }
            FileHandle.standardError.write(Data("imagepipe: deleted \(count) finished job(s)\n".utf8))
        }
    }
}
