// Turns a queue argument into the queue a worker claims from: a queue directory or a PostgreSQL queue.
import Foundation
import ImagePipe
import ImagePipePostgres
import ImagePipeQueue
import Logging

/// The kind of queue a command names: the one place a queue argument is read, so adding a queue is
/// a case here and in the switches over it (which the compiler then asks for).
enum QueueKind {
    /// A queue directory (a path; created by `watch` when missing).
    case directory(String)
    /// A PostgreSQL queue: `postgres://` or `postgresql://`.
    case postgres(PostgresLocation)

    /// Whether `text` names a PostgreSQL queue, for checks made before it is parsed (option
    /// validation, commands that take one kind only).
    static func isPostgres(_ text: String) -> Bool { PostgresLocation.isURL(text) }

    /// The queue `text` names. A URL of any other scheme is an error naming it, not a directory
    /// called `mysql:`: no queue directory is meant to be spelled as a URL.
    init(_ text: String) throws(ImagePipeError) {
        if Self.isPostgres(text) {
            self = .postgres(try PostgresLocation(parsing: text))
        } else if let separator = text.range(of: "://") {
            // Only the scheme is named: an unknown database URL may carry a password.
            throw .configuration(
                "unsupported queue scheme '\(text[..<separator.lowerBound].lowercased())://'; "
                    + "a queue is a directory path or postgres://USER@HOST:PORT/DATABASE?queue=NAME")
        } else {
            self = .directory(text)
        }
    }
}

/// Opens the queue a worker claims from.
enum QueueFactory {
    /// What a worker's queue is opened with; each kind takes the settings that apply to it.
    struct Settings {
        /// Queue directory: how often the inbox is scanned in full, and how long a delivery must stay still.
        var rescanInterval: Duration
        var quietPeriod: Duration
        /// PostgreSQL: how long a claim holds before another worker may take the job over.
        var lease: Duration
        /// PostgreSQL: how long finished jobs are kept.
        var retention: Duration
        /// Attempts per job before a transient failure is final.
        var maxAttempts: Int
        /// Whether notifications are sent, so the queue keeps what is to be sent with each outcome.
        var notifies: Bool
    }

    /// The queue `kind` names, opened for a worker (a queue directory is created when missing).
    static func make(_ kind: QueueKind, _ settings: Settings, logger: Logger) throws(ImagePipeError) -> any JobQueue {
        switch kind {
        case .directory(let path):
            try DirectoryQueue(
                directory: QueueDirectory(root: path),
                configuration: .init(
                    rescanInterval: settings.rescanInterval, quietPeriod: settings.quietPeriod,
                    takesOverNotices: settings.notifies, maxAttempts: settings.maxAttempts),
                logger: logger)
        case .postgres(let location):
            try PostgresQueue(
                location: location,
                configuration: .init(
                    lease: settings.lease, maxAttempts: settings.maxAttempts, retention: settings.retention,
                    keepsNotices: settings.notifies),
                logger: logger)
        }
    }
}
