// Claiming, renewing leases and what is left: one short statement each.
import Foundation
import ImagePipe
import ImagePipeQueue
import PostgresNIO

extension QueueDatabase {
    /// A claimed row. A job's history of failed attempts stays in the database: retries and
    /// discards add to it there.
    struct ClaimedRow: Sendable {
        let id: Int
        let source: String
        let attempt: Int
        /// The job's options as JSON text (``QueuedJobOptions``).
        let options: String
        /// Its earlier attempts whose error is a decoder failure (``ImagePipeError/Code/isDecoderFailure``).
        let decoderFailures: Int
    }

    /// Claims up to `limit` due jobs of `queue` for `owner`; none when the database cannot be reached.
    ///
    /// `FOR UPDATE SKIP LOCKED` makes workers claiming at the same moment take different rows instead
    /// of queueing behind each other; the partial index on waiting jobs keeps the scan to them.
    func claim(queue: String, limit: Int, owner: String, lease: Duration) async -> [ClaimedRow] {
        let statement = Claim(queue: queue, limit: limit, owner: owner, leaseSeconds: lease.timeInterval)
        guard let rows = await once("claim", .prepared(statement)) else { return [] }
        return rows.sorted { $0.0 < $1.0 }.map { ClaimedRow(id: $0, source: $1, attempt: $2, options: $3, decoderFailures: $4) }
    }

    /// The claim, prepared: it runs for every few jobs.
    ///
    /// It also counts the job's earlier attempts that ended with a decoder failure, from the errors
    /// its history already holds (one entry per failed attempt, with its code): no column keeps a
    /// second account of them that could disagree, and a history is a few entries long.
    struct Claim: PostgresPreparedStatement {
        static let sql = """
            WITH next AS (
                SELECT id FROM imagepipe.jobs
                WHERE queue = $1 AND state = 'waiting' AND run_at <= now()
                ORDER BY priority, run_at, id
                LIMIT $2
                FOR UPDATE SKIP LOCKED
            )
            UPDATE imagepipe.jobs AS j
            SET state = 'running', attempt = j.attempt + 1, lease_owner = $3,
                lease_expires_at = now() + make_interval(secs => $4), started_at = now()
            FROM next WHERE j.id = next.id
            RETURNING j.id, left(j.source, \(JobSource.maxSourceBytes + 1)), j.attempt, left(j.options::text, \(JobSource.maxOptionsBytes)),
                (SELECT count(*) FROM jsonb_array_elements(j.errors) AS e
                 WHERE e->>'error_code' IN (\(decoderFailureCodes)))::bigint
            """
        typealias Row = (Int, String, Int, String, Int)

        /// The codes of decoder failures, quoted for SQL (`'decoder_crashed', 'job_timeout'`), from
        /// the one rule that says which they are.
        static let decoderFailureCodes = ImagePipeError.Code.all.filter(\.isDecoderFailure).map { "'\($0)'" }.joined(separator: ", ")

        let queue: String
        let limit: Int
        let owner: String
        let leaseSeconds: Double

        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 4)
            bindings.append(queue)
            bindings.append(limit)
            bindings.append(owner)
            bindings.append(leaseSeconds)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
    }

    /// Extends the leases `owner` still holds; returns the IDs renewed, each with whether someone
    /// asked to cancel it, or nil when the database could not be reached (nothing is known then).
    func renew(_ fences: [Fence], owner: String, lease: Duration) async -> [Int: Bool]? {
        guard !fences.isEmpty else { return [:] }
        let query: PostgresQuery = """
            UPDATE imagepipe.jobs AS j SET lease_expires_at = now() + make_interval(secs => \(lease.timeInterval))
            FROM unnest(\(fences.map(\.id))::bigint[], \(fences.map(\.attempt))::bigint[]) AS h(id, attempt)
            WHERE j.id = h.id AND j.attempt = h.attempt AND j.lease_owner = \(owner) AND j.state = 'running'
            RETURNING j.id, j.cancel_requested_at IS NOT NULL
            """
        return await once("heartbeat", query, { try $0.decode((Int, Bool).self) }).map { Dictionary($0, uniquingKeysWith: { $1 }) }
    }

    /// What is left in a queue for a worker about to call it empty.
    struct Remainder: Sendable {
        /// Waiting jobs due within the horizon, and after it.
        var due: Int
        var later: Int
        /// The running jobs of other workers, with their lease's expiry (seconds since 1970).
        var leases: [(id: Int, attempt: Int, expires: Double)]
    }

    /// Counts `queue`'s waiting jobs due within `horizon` and after it, and lists the leases of the
    /// jobs other workers than `owner` run; nil when the database cannot be reached.
    func remainder(queue: String, owner: String, horizon: Duration) async -> Remainder? {
        let query: PostgresQuery = """
            SELECT state, id, attempt, run_at <= now() + make_interval(secs => \(horizon.timeInterval)),
                   extract(epoch FROM lease_expires_at)::float8
            FROM imagepipe.jobs
            WHERE queue = \(queue) AND (state = 'waiting' OR (state = 'running' AND lease_owner IS DISTINCT FROM \(owner)))
            """
        guard let rows = await once("what is left", query, { try $0.decode((String, Int, Int, Bool, Double?).self) }) else { return nil }
        var remainder = Remainder(due: 0, later: 0, leases: [])
        for (state, id, attempt, soon, expires) in rows {
            if state == "waiting" {
                if soon { remainder.due += 1 } else { remainder.later += 1 }
            } else {
                remainder.leases.append((id, attempt, expires ?? 0))
            }
        }
        return remainder
    }

    /// Wakes idle workers of `queue`.
    func notifyWaiting(_ queue: String) async {
        _ = await once("notify", "SELECT pg_notify('imagepipe_jobs', \(queue))::text", { try $0.decode(String.self) })
    }
}
