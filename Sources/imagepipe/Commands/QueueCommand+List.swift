// `imagepipe queue list`: the jobs in a state, each with its age, source, worker or last error.
import ArgumentParser
import Foundation
import ImagePipe
import ImagePipeQueue

extension QueueCommand {
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List jobs by state: ID, state, age, source, and what matters in that state (the worker, the last error).",
            discussion: """
                One tab-separated line per job (with --json, one JSON object per line). Waiting jobs come in the order \
                they are claimed, running ones longest-running first, finished ones latest first. A job's ID is what \
                `queue retry` and `queue cancel` take: a PostgreSQL row's ID, a path relative to the directory's folder.
                """)

        @Argument(help: QueueCommand.queueHelp)
        var queue: String

        @Option(
            name: .long, help: "waiting, running, done, failed or cancelled (repeat for several; default: all).",
            transform: QueueCommand.state)
        var state: [QueueOverview.State] = []

        @Option(name: .long, help: "Jobs listed per state at most.")
        var limit = QueueOverview.listLimit

        @Flag(name: .long, help: "One JSON object per job instead of tab-separated lines.")
        var json = false

        func validate() throws {
            guard limit >= 1 else { throw ValidationError("--limit must be at least 1") }
        }

        func run() async throws {
            let driver = try QueueDrivers.open(queue)
            // Without --state, the states this queue has; a state it has not, asked for, is an error.
            let states = state.isEmpty ? driver.states : state
            var lines = ""
            for state in states {
                // One more than shown tells whether there are more.
                let jobs = try await driver.list(state, limit: limit + 1)
                for job in jobs.prefix(limit) { lines += (json ? JSONLine.encode(job) : job.line) + "\n" }
                if jobs.count > limit {
                    FileHandle.standardError.write(Data("imagepipe: more \(state.rawValue) jobs than --limit \(limit) shows\n".utf8))
                }
            }
            FileHandle.standardOutput.write(Data(lines.utf8))
        }
    }
}
