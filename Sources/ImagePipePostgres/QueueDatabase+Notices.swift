// Kept notices: held like claims and renewed, taken over when their worker stopped or died, deleted in batches once delivered.
import Foundation
import ImagePipe
import PostgresNIO

extension QueueDatabase {
    /// Takes up to `limit` notices whose hold has passed (their worker stopped or died before
    /// delivering them), holding them for this worker for `hold`; skips rows another worker is
    /// taking at the same moment. Nil when the database cannot be reached.
    func takeOverNotices(queue: String, hold: Duration, limit: Int = 100) async -> [String]? {
        let query: PostgresQuery = """
            UPDATE imagepipe.notices AS n SET due_at = now() + make_interval(secs => \(hold.timeInterval)::float8)
            WHERE n.id IN (
                SELECT id FROM imagepipe.notices WHERE queue = \(queue) AND due_at <= now()
                ORDER BY due_at LIMIT \(limit) FOR UPDATE SKIP LOCKED
            )
            RETURNING n.body
            """
        return await once("take over notices", query) { try $0.decode(String.self) }
    }

    /// Deletes notices delivered or given up; false when the database cannot be reached (they are
    /// sent again by whoever takes them over: delivery is at least once).
    func deleteNotices(_ ids: [String]) async -> Bool {
        let query: PostgresQuery = "DELETE FROM imagepipe.notices WHERE id = ANY(\(ids)::text[]) RETURNING 1"
        return await once("forget notices", query) { try $0.decode(Int.self) } != nil
    }

    /// Holds notices this worker is still sending for another `hold`.
    func renewNotices(_ ids: [String], hold: Duration) async {
        let query: PostgresQuery = """
            UPDATE imagepipe.notices SET due_at = now() + make_interval(secs => \(hold.timeInterval)::float8)
            WHERE id = ANY(\(ids)::text[]) RETURNING 1
            """
        _ = await once("renew notices", query) { try $0.decode(Int.self) }
    }

    /// Makes notices due now: this worker stops with them undelivered, and the next may send them at once.
    func releaseNotices(_ ids: [String]) async {
        let query: PostgresQuery = "UPDATE imagepipe.notices SET due_at = now() WHERE id = ANY(\(ids)::text[]) RETURNING 1"
        _ = await once("leave notices", query) { try $0.decode(Int.self) }
    }
}
