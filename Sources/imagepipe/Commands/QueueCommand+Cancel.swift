// `imagepipe queue cancel`: a waiting job cancelled at once, a running one stopped by its worker at its next safe point.
import ArgumentParser
import Foundation
import ImagePipe
import ImagePipeQueue

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
            try AdminReport.print(try await QueueDrivers.open(queue).cancel(ids))
        }
    }
}
