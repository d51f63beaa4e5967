// The queue a `queue` subcommand names: a queue directory or a PostgreSQL URL, and what a command cannot do with one.
import Foundation
import ImagePipe
import ImagePipePostgres
import ImagePipeQueue

/// A queue named on the command line.
enum QueueTarget {
    /// A queue directory that exists (nothing is created for a command that looks after a queue).
    case directory(QueueDirectory)
    /// A PostgreSQL queue.
    case postgres(PostgresLocation)

    /// The queue `text` names (see ``QueueKind``); a queue directory must exist.
    init(_ text: String) throws(ImagePipeError) {
        switch try QueueKind(text) {
        case .postgres(let location): self = .postgres(location)
        case .directory(let path): self = .directory(try QueueDirectory(existing: path))
        }
    }

    /// The error for a command or option that does not apply to this kind of queue (exit status 2).
    func unsupported(_ what: String, _ instead: String) -> ImagePipeError {
        switch self {
        case .directory(let queue): .configuration("\(what) does not apply to a queue directory (\(queue.root)): \(instead)")
        case .postgres(let location): .configuration("\(what) does not apply to a PostgreSQL queue (\(location)): \(instead)")
        }
    }

    /// Runs `body` with the PostgreSQL queue's database, logging only warnings. A database without
    /// imagepipe's schema is refused ("no imagepipe queue here"), not given one, as a missing queue
    /// directory is.
    static func withDatabase<T: Sendable>(
        _ location: PostgresLocation, _ body: @Sendable (QueueDatabase) async throws(ImagePipeError) -> T
    ) async throws(ImagePipeError) -> T {
        try await QueueDatabase.run(location, logger: CompositionRoot.bootstrapLogging(level: "warning"), creating: false, body)
    }
}
