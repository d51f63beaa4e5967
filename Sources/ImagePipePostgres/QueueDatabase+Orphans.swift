// Jobs whose lease expired (their worker died, stalled or lost the database): listed, then each settled as the worker's rule decides, fenced.
import Foundation
import ImagePipe
import ImagePipeQueue
import PostgresNIO

extension QueueDatabase {
    /// Finds the running jobs of `queue` whose lease expired and settles each as `rule` decides:
    /// waiting again, failed (`worker_crashed`) or cancelled, the dead worker's attempt added to its
    /// history either way. A job that ends keeps its notice in the same statement, due at once,
    /// whether this worker notifies or not: whichever notifying worker looks next sends it, this one
    /// or another, and only once, as the row is written once. A queue without notifying workers
    /// keeps the row until its job is pruned.
    ///
    /// Any worker runs this, with no leader: the settling statement is fenced by each job's ID and
    /// attempt and by the lease still being expired, so of two workers deciding on the same job at
    /// once only one settles it, and a job claimed again meanwhile is left alone.
    /// - Returns: how many notices it kept.
    @discardableResult
    func recoverOrphans(queue: String, rule: OrphanRule) async -> Int {
        let listing: PostgresQuery = """
            SELECT id, attempt, left(source, 2048), coalesce(lease_owner, ''), cancel_requested_at IS NOT NULL
            FROM imagepipe.jobs
            WHERE queue = \(queue) AND state = 'running' AND lease_expires_at < now()
            ORDER BY lease_expires_at LIMIT 1000
            """
        guard let rows = await once("find jobs whose lease expired", listing, { try $0.decode((Int, Int, String, String, Bool).self) }),
            !rows.isEmpty
        else { return 0 }
        var ids: [Int] = [], attempts: [Int] = [], states: [String] = [], failures: [String] = [], results: [String] = []
        var noticeIDs: [String] = [], notices: [String] = []
        for (id, attempt, source, worker, cancelRequested) in rows {
            let orphan = Orphan(id: String(id), source: source, attempts: attempt, worker: worker, cancelRequested: cancelRequested)
            let fate = rule.fate(of: orphan)
            ids.append(id)
            attempts.append(attempt)
            failures.append(JSONLine.encode(orphan.failure(final: fate != .retry)))
            switch fate {
            case .retry:
                states.append("waiting")
                results.append("")
                noticeIDs.append("")
                notices.append("")
            case .fail, .cancel:
                states.append(fate == .cancel ? "cancelled" : "failed")
                results.append(orphan.result(fate, maxAttempts: rule.maxAttempts).jsonLine())
                let notice = orphan.notice(fate, maxAttempts: rule.maxAttempts)
                noticeIDs.append(notice.id)
                notices.append(JSONLine.encode(notice))
            }
        }
        let settling: PostgresQuery = """
            WITH fates AS (
                SELECT * FROM unnest(\(ids)::bigint[], \(attempts)::bigint[], \(states)::text[], \(failures)::text[],
                                     \(results)::text[], \(noticeIDs)::text[], \(notices)::text[])
                    AS f(id, attempt, state, failure, result, notice_id, notice)
            ), settled AS (
                UPDATE imagepipe.jobs AS j SET
                    state = f.state,
                    finished_at = CASE WHEN f.state = 'waiting' THEN NULL ELSE now() END,
                    result = CASE WHEN f.state = 'waiting' THEN j.result ELSE f.result::jsonb END,
                    run_at = now(), lease_owner = NULL, lease_expires_at = NULL,
                    errors = j.errors || jsonb_build_array(f.failure::jsonb)
                FROM fates AS f
                WHERE j.id = f.id AND j.attempt = f.attempt AND j.state = 'running' AND j.lease_expires_at < now()
                RETURNING j.id, j.queue, j.state
            ), kept AS (
                INSERT INTO imagepipe.notices (id, job_id, queue, body, due_at)
                SELECT f.notice_id, s.id, s.queue, f.notice, now()
                FROM settled AS s JOIN fates AS f ON f.id = s.id
                WHERE f.notice_id <> ''
            )
            SELECT id, state, CASE WHEN state = 'waiting' THEN '' ELSE imagepipe.notify_finished(id)::text END FROM settled
            """
        guard let settled = await once("settle jobs whose lease expired", settling, { try $0.decode((Int, String, String).self) }),
            !settled.isEmpty
        else { return 0 }
        let ended = settled.filter { $0.1 != "waiting" }
        logger.notice(
            "took back jobs whose worker died (their lease expired)",
            metadata: [
                "queue": "\(queue)", "returned": .stringConvertible(settled.count - ended.count),
                "failed": .stringConvertible(ended.filter { $0.1 == "failed" }.count),
                "cancelled": .stringConvertible(ended.filter { $0.1 == "cancelled" }.count),
                "error_code": "\(ImagePipeError.Code.workerCrashed)",
            ])
        if ended.count < settled.count { await notifyWaiting(queue) }
        let told = Set(zip(ids, noticeIDs).filter { !$0.1.isEmpty }.map(\.0))
        return ended.count(where: { told.contains($0.0) })
    }
}
