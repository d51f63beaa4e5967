// `imagepipe queue status`: jobs by state, the oldest wait, the rate, who runs what and why jobs failed.
import ArgumentParser
import Foundation
import ImagePipe
import ImagePipeQueue

extension QueueCommand {
    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the jobs by state, how long the oldest due job has waited, jobs finished per second over the last minute, "
                + "then the running jobs (who runs each, for how long) and the latest failed ones with their errors.")

        @Argument(help: QueueCommand.queueHelp)
        var queue: String

        @Flag(name: .long, help: "Print one JSON object instead of lines.")
        var json = false

        func run() async throws {
            let driver = try QueueDrivers.open(queue)
            let overview = try await driver.overview()
            FileHandle.standardOutput.write(Data((json ? JSONLine.encode(overview) + "\n" : overview.text).utf8))
            // Lines of people's own, beside the ones scripts read: `running 15` above ten rows is
            // otherwise taken for a queue that lost five jobs.
            // A URL is named as logs name it, never with the password it may have been typed with.
            if !json, let notes = overview.notShownNotes(queue: driver.displayName) {
                FileHandle.standardError.write(Data(notes.utf8))
            }
        }
    }
}
