// Whether PostgreSQL is lost, seen two ways (statements that fail, new connections refused), so that one outage is one pair of log lines.
import Foundation

/// An outage of the queue's database as the worker saw it.
///
/// Statements on pooled connections and fresh connections fail in different outages: a server in a
/// smart shutdown (`pg_ctl stop -m smart`, `docker stop`) refuses every new connection while those
/// already open go on answering, and only leaves once every client has let go. Each way of looking
/// is tracked on its own; the database is lost while either fails, and back once both answer, so
/// a statement that still works on an old connection does not end an outage a refused connection
/// started.
struct DatabaseOutage: Sendable {
    /// A way of looking at the database.
    enum Channel: Sendable {
        /// Statements through the pool.
        case statements
        /// A fresh connection (the probe).
        case connections
    }

    /// The channels failing now.
    private(set) var failing: Set<Channel> = []
    /// When the outage began, and the first failure's reason.
    private(set) var since: Date?
    private(set) var reason = ""

    /// Whether the database is lost now.
    var isLost: Bool { !failing.isEmpty }

    /// Records a failure; true when it begins an outage (worth one log line).
    mutating func failed(_ channel: Channel, reason: String, at now: Date) -> Bool {
        let began = failing.isEmpty
        failing.insert(channel)
        if began {
            since = now
            self.reason = reason
        }
        return began
    }

    /// Records an answer; true when it ends the outage (worth one log line).
    mutating func answered(_ channel: Channel) -> Bool {
        guard failing.remove(channel) != nil, failing.isEmpty else { return false }
        since = nil
        reason = ""
        return true
    }

    /// Why the queue is not ready, for `/readyz`: nil while the database answers.
    func readiness(at now: Date) -> String? {
        guard let since, isLost else { return nil }
        let seconds = Int(now.timeIntervalSince(since).rounded())
        return "lost PostgreSQL \(seconds) s ago: \(reason); reconnecting"
    }
}
