// `imagepipe queue cancel`: a waiting job cancelled at once, a running one stopped by its worker at its next safe point.
import ArgumentParser
import Foundation
import ImagePipe
import ImagePipePostgres

extension QueueCommand {
    struct Cancel: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Cancel PostgreSQL jobs by ID: waiting ones at once, running ones at their next safe point.",
            discussion: """
                A waiting job becomes cancelled at once. A running one is asked to stop: its worker hears of it at \
                once (NOTIFY imagepipe_cancel) or at its next heartbeat, stops the job before its next stage (outputs \
                already stored stay, nothing more is stored) and records it cancelled; a job that was done first stays \
                done. Prints ID<TAB>cancelled or ID<TAB>cancel_requested for each. Exit status 1 when a job had \
                finished already or does not exist. A queue directory has no cancel: move the file out of inbox/.
                """)

        @Argument(help: QueueCommand.queueHelp)
        var queue: String

        /// Text, not numbers, for the parser: a queue directory's user names a file, and is told what
        /// to do instead of that the value is no number.
        @Argument(help: "The IDs of the jobs to cancel.")
        var ids: [String] = []

        func validate() throws {
            guard !ids.isEmpty else { throw ValidationError("name at least one job ID") }
        }

        func run() async throws {
            let target = try QueueTarget(queue)
            guard case .postgres(let location) = target else {
                throw target.unsupported("queue cancel", "withdraw a waiting job by moving its file out of inbox/")
            }
            var numbers: [Int] = []
            for text in self.ids {
                guard let id = Int(text) else {
                    throw ImagePipeError.configuration("'\(text)' is not a job ID: a PostgreSQL queue's jobs are numbered")
                }
                numbers.append(id)
            }
            let ids = numbers
            let outcomes = try await QueueTarget.withDatabase(location) { database throws(ImagePipeError) in try await database.cancel(ids: ids) }
            var lines = "", problems = ""
            for (id, outcome) in zip(ids, outcomes) {
                switch outcome {
                case .cancelled: lines += "\(id)\tcancelled\n"
                case .requested: lines += "\(id)\tcancel_requested\n"
                case .finished(let state): problems += "imagepipe: job \(id) is \(state) already: nothing to cancel\n"
                case .notFound: problems += "imagepipe: no job \(id) in the queue \(location.queue)\n"
                }
            }
            FileHandle.standardOutput.write(Data(lines.utf8))
            FileHandle.standardError.write(Data(problems.utf8))
            if !problems.isEmpty { throw ExitCode(1) }
        }
    }
}
