// `imagepipe queue status|list|retry|cancel|prune`: look after a queue directory or a PostgreSQL queue without SQL.
import ArgumentParser
import Foundation
import ImagePipe
import ImagePipeQueue

struct QueueCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "queue",
        abstract: "Look after a queue directory or a PostgreSQL queue: status, list, retry, cancel, prune.",
        discussion: """
            QUEUE is a queue directory or postgres://USER@HOST:PORT/DATABASE?queue=NAME. Both kinds name job states \
            alike: waiting (a directory's inbox/), running (processing/), done (done/), failed (failed/) and \
            cancelled (PostgreSQL only). A command that does not apply to a kind of queue exits 2 and says so.
            """,
        subcommands: [Status.self, List.self, Retry.self, Cancel.self, Prune.self])

    /// The help of every subcommand's QUEUE argument.
    static let queueHelp = ArgumentHelp(
        "A queue directory, or postgres://USER@HOST:PORT/DATABASE?queue=NAME (the password from PGPASSWORD or ~/.pgpass).",
        valueName: "queue")

    /// `--state`: a state's name, or why the name is not one.
    static func state(_ text: String) throws -> QueueOverview.State {
        guard let state = QueueOverview.State(name: text) else {
            throw ValidationError("--state '\(text)' is not a state: waiting, running, done, failed or cancelled")
        }
        return state
    }
}
