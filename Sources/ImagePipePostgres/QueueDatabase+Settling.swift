// Recording outcomes: done (batched, with a NOTIFY and the kept notices), retry, discard and release, each fenced by ID, attempt and owner.
import Foundation
import ImagePipe
import ImagePipeQueue
import PostgresNIO

extension QueueDatabase {
    /// Records many jobs' success in one statement and notifies `imagepipe_done` with each job's ID.
    /// A job's notice, if it has one, is kept in the same statement as its result.
    func completeAll(_ batch: [PostgresQueue.Completion], owner: String, hold: Duration) async -> [Settlement] {
        let statement = Complete(
            ids: batch.map(\.id), attempts: batch.map(\.attempt), results: batch.map(\.result), owner: owner,
            noticeIDs: batch.map { $0.notice?.id ?? "" }, notices: batch.map { $0.notice?.body ?? "" }, hold: hold.timeInterval)
        guard let recorded = await persistently("complete", .prepared(statement)).map(Set.init) else {
            return batch.map { _ in .unrecorded }
        }
        return batch.map { recorded.contains($0.id) ? .recorded : .leaseLost }
    }

    /// Recording jobs done, prepared: it runs for every few jobs.
    struct Complete: PostgresPreparedStatement {
        static let sql = """
            WITH settled AS (
                UPDATE imagepipe.jobs AS j
                SET state = 'done', result = d.result::jsonb, finished_at = now(), lease_owner = NULL, lease_expires_at = NULL
                FROM unnest($1::bigint[], $2::bigint[], $3::text[]) AS d(id, attempt, result)
                WHERE j.id = d.id AND j.attempt = d.attempt AND j.lease_owner = $4 AND j.state = 'running'
                RETURNING j.id, j.queue
            ), kept AS (
                INSERT INTO imagepipe.notices (id, job_id, queue, body, due_at)
                SELECT n.notice_id, s.id, s.queue, n.body, now() + make_interval(secs => $7)
                FROM settled AS s JOIN unnest($1::bigint[], $5::text[], $6::text[]) AS n(job_id, notice_id, body) ON n.job_id = s.id
                WHERE n.notice_id <> ''
            )
            SELECT imagepipe.notify_finished(id) FROM settled
            """
        typealias Row = Int

        let ids: [Int]
        let attempts: [Int]
        let results: [String]
        let owner: String
        /// Each job's notice id and body, empty when it has none.
        let noticeIDs: [String]
        let notices: [String]
        /// Seconds the settling worker has to deliver them before another may.
        let hold: Double

        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 7)
            bindings.append(ids)
            bindings.append(attempts)
            bindings.append(results)
            bindings.append(owner)
            bindings.append(noticeIDs)
            bindings.append(notices)
            bindings.append(hold)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Int.self) }
    }

    /// Puts a job back to wait `delay` before its next attempt, adding `failure` to its history; a
    /// job someone asked to cancel meanwhile is cancelled instead.
    func retry(_ fence: Fence, owner: String, failure: String, after delay: Duration) async -> Settlement {
        let query: PostgresQuery = """
            UPDATE imagepipe.jobs
            SET state = CASE WHEN cancel_requested_at IS NULL THEN 'waiting' ELSE 'cancelled' END,
                finished_at = CASE WHEN cancel_requested_at IS NULL THEN NULL ELSE now() END,
                run_at = now() + make_interval(secs => \(delay.timeInterval)),
                lease_owner = NULL, lease_expires_at = NULL, errors = errors || jsonb_build_array(\(failure)::jsonb)
            WHERE id = \(fence.id) AND attempt = \(fence.attempt) AND lease_owner = \(owner) AND state = 'running'
            RETURNING id
            """
        return settlement(await persistently("retry", query, { try $0.decode(Int.self) }))
    }

    /// Fails a job for good: its last attempt's `failure` added to its history, and that attempt's result record.
    func discard(_ fence: Fence, owner: String, failure: String, result: String, notice: HeldNotice? = nil) async -> Settlement {
        await end(fence, as: "failed", owner: owner, failure: failure, result: result, notice: notice)
    }

    /// Gives jobs back unfinished (a shutdown, a claim answered as claiming paused): waiting again
    /// at once, the attempt not counted; a job someone asked to cancel is cancelled instead.
    ///
    /// Tried once: a worker stopping while the database is away leaves its jobs to lease expiry.
    func release(_ fences: [Fence], owner: String, queue: String) async {
        let query: PostgresQuery = """
            UPDATE imagepipe.jobs AS j
            SET state = CASE WHEN j.cancel_requested_at IS NULL THEN 'waiting' ELSE 'cancelled' END,
                finished_at = CASE WHEN j.cancel_requested_at IS NULL THEN NULL ELSE now() END,
                attempt = j.attempt - 1, run_at = now(), lease_owner = NULL, lease_expires_at = NULL
            FROM unnest(\(fences.map(\.id))::bigint[], \(fences.map(\.attempt))::bigint[]) AS r(id, attempt)
            WHERE j.id = r.id AND j.attempt = r.attempt AND j.lease_owner = \(owner) AND j.state = 'running'
            RETURNING j.id
            """
        if let released = await once("release", query, { try $0.decode(Int.self) }), !released.isEmpty { await notifyWaiting(queue) }
    }

    /// Records a job stopped at a cancel request: its attempt's `failure` (`cancelled`) added to its
    /// history, with that attempt's result record. Never retried, never done.
    func cancel(_ fence: Fence, owner: String, failure: String, result: String, notice: HeldNotice?) async -> Settlement {
        await end(fence, as: "cancelled", owner: owner, failure: failure, result: result, notice: notice)
    }

    /// A notice to keep with a job's result, and how long the settling worker has to deliver it
    /// before another may take it over.
    struct HeldNotice: Sendable {
        var notice: JobNotice
        var hold: Duration

        var id: String { notice.id }
        /// The notice's JSON, as the table keeps it and a taken-over notice is read back from.
        var body: String { JSONLine.encode(notice) }
    }

    /// Ends a running job for good in `state` (`failed` or `cancelled`), fenced by its attempt and
    /// owner, keeps its notice, and tells listeners it finished.
    private func end(
        _ fence: Fence, as state: String, owner: String, failure: String, result: String, notice: HeldNotice?
    ) async -> Settlement {
        let query: PostgresQuery = """
            WITH settled AS (
                UPDATE imagepipe.jobs
                SET state = \(state), finished_at = now(), lease_owner = NULL, lease_expires_at = NULL,
                    errors = errors || jsonb_build_array(\(failure)::jsonb), result = \(result)::jsonb
                WHERE id = \(fence.id) AND attempt = \(fence.attempt) AND lease_owner = \(owner) AND state = 'running'
                RETURNING id, queue
            ), kept AS (
                INSERT INTO imagepipe.notices (id, job_id, queue, body, due_at)
                SELECT \(notice?.id ?? "")::text, id, queue, \(notice?.body ?? "")::text,
                       now() + make_interval(secs => \(notice?.hold.timeInterval ?? 0)::float8)
                FROM settled WHERE \(notice?.id ?? "")::text <> ''
            )
            SELECT imagepipe.notify_finished(id) FROM settled
            """
        return settlement(await persistently(state, query, { try $0.decode(Int.self) }))
    }

    private func settlement(_ rows: [Int]?) -> Settlement {
        guard let rows else { return .unrecorded }
        return rows.isEmpty ? .leaseLost : .recorded
    }
}
