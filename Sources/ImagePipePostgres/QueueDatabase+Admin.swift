// What producers and operators do: enqueue sources, look at jobs by state, cancel them, put failed jobs back, delete old ones.
public import Foundation
public import ImagePipe
public import ImagePipeQueue
import PostgresNIO

extension QueueDatabase {
    /// When an enqueued job is due.
    public typealias RunAt = JobRunAt

    /// What `cancel` did to one job.
    public enum CancelOutcome: Sendable, Equatable {
        /// It was waiting: it is cancelled.
        case cancelled
        /// It is running: its worker stops it at its next safe point and records it cancelled.
        case requested
        /// It had finished already, in this state: nothing changed.
        case finished(String)
        /// The queue has no job with this ID.
        case notFound
    }

    /// Adds one job per source through `imagepipe.enqueue`, in one statement; returns each job's ID
    /// in order, nil where `unique` found the source already waiting or running. Lower `priority`
    /// jobs are claimed first.
    public func enqueue(
        _ sources: [String], unique: Bool, priority: Int = 0, runAt: RunAt = .now, options: QueuedJobOptions = QueuedJobOptions()
    ) async throws(ImagePipeError) -> [Int?] {
        guard !sources.isEmpty else { return [] }
        let (at, delay): (Date?, Double) =
            switch runAt {
            case .now: (nil, 0)
            case .at(let date): (date, 0)
            case .after(let duration): (nil, duration.timeInterval)
            }
        let query: PostgresQuery = """
            SELECT imagepipe.enqueue(s.source, \(location.queue), \(unique),
                                     coalesce(\(at)::timestamptz, now() + make_interval(secs => \(delay))), \(priority)::integer,
                                     \(options.json)::jsonb)
            FROM unnest(\(sources)::text[]) WITH ORDINALITY AS s(source, n) ORDER BY s.n
            """
        return try await required("enqueue", query, { try $0.decode(Int?.self) })
    }

    /// Counts by state, the oldest due job's wait, the rate over the last minute, and the running
    /// jobs and latest failed ones (up to `detailLimit` of each).
    public func overview(detailLimit: Int = 10) async throws(ImagePipeError) -> QueueOverview {
        let queue = location.queue
        let counts = try await required(
            "status", "SELECT state, count(*)::bigint FROM imagepipe.jobs WHERE queue = \(queue) GROUP BY state",
            { try $0.decode((String, Int).self) })
        let oldest = try await required(
            "status",
            """
            SELECT extract(epoch FROM now() - min(run_at))::float8 FROM imagepipe.jobs
            WHERE queue = \(queue) AND state = 'waiting' AND run_at <= now()
            """, { try $0.decode(Double?.self) })
        let recent = try await required(
            "status",
            """
            SELECT count(*)::bigint FROM imagepipe.jobs
            WHERE queue = \(queue) AND state IN ('done', 'failed') AND finished_at > now() - interval '1 minute'
            """, { try $0.decode(Int.self) })
        var byState = Dictionary(uniqueKeysWithValues: QueueOverview.State.allCases.map { ($0, 0) })
        for (state, count) in counts { if let known = QueueOverview.State(rawValue: state) { byState[known] = count } }
        let jobs = try await list(.running, limit: detailLimit) + list(.failed, limit: detailLimit)
        return QueueOverview(
            kind: "postgres", queue: location.description, counts: byState, oldestWaitingSeconds: oldest.first ?? nil,
            finishedPerSecond: Double(recent.first ?? 0) / 60, jobs: jobs)
    }

    /// The jobs in `state`, at most `limit`: waiting ones in the order workers claim them, running
    /// ones longest-running first, finished ones latest first; each with its last error.
    public func list(_ state: QueueOverview.State, limit: Int) async throws(ImagePipeError) -> [QueueOverview.Job] {
        let order =
            switch state {
            case .waiting: "priority, run_at, id"
            case .running: "started_at, id"
            case .done, .failed, .cancelled: "finished_at DESC, id DESC"
            }
        let query = PostgresQuery(
            unsafeSQL: """
                SELECT id, left(source, 1000), attempt, priority,
                    extract(epoch FROM now() - CASE state WHEN 'waiting' THEN least(run_at, now()) WHEN 'running' THEN started_at
                                                          ELSE finished_at END)::float8,
                    CASE WHEN state = 'waiting' AND run_at > now() THEN extract(epoch FROM run_at - now())::float8 END,
                    lease_owner, cancel_requested_at IS NOT NULL,
                    errors->-1->>'error_code', left(errors->-1->>'error', 2000),
                    CASE WHEN state = 'running' AND lease_expires_at < now()
                         THEN to_char(lease_expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') END
                FROM imagepipe.jobs WHERE queue = $1 AND state = $2
                ORDER BY \(order) LIMIT $3
                """,
            binds: Self.bindings(location.queue, state.rawValue, limit))
        typealias Row = (Int, String, Int, Int, Double?, Double?, String?, Bool, String?, String?, String?)
        return try await required("list", query, { try $0.decode(Row.self) }).map { row in
            var job = QueueOverview.Job(id: String(row.0), state: state, source: row.1)
            job.attempts = row.2
            job.priority = row.3
            job.ageSeconds = row.4.map { max(0, $0) }
            job.dueInSeconds = row.5
            job.owner = row.6.map { owner in row.10.map { Self.abandoned(owner, leaseExpiredAt: $0) } ?? owner }
            job.cancelRequested = state == .running ? row.7 : nil
            job.errorCode = row.8
            job.error = row.9
            return job
        }
    }

    /// A running job's owner whose lease ran out: its worker died, stalled or lost the database,
    /// and the job stays `running` until a worker takes it back. Said as a queue directory says a
    /// claim area whose worker died (`, abandoned`), with when the lease expired.
    static func abandoned(_ owner: String, leaseExpiredAt expiry: String) -> String {
        "\(owner), abandoned: its lease expired at \(expiry) (the next worker to look takes the job back)"
    }

    /// Cancels jobs of this queue by ID, through `imagepipe.cancel`: a waiting one at once, a
    /// running one at its worker's next safe point. Returns what happened to each, in order.
    public func cancel(ids: [Int]) async throws(ImagePipeError) -> [CancelOutcome] {
        guard !ids.isEmpty else { return [] }
        // A waiting job cancelled here ends now, and is told as a job a worker settles is: its notice
        // is kept in the statement that cancels it, due at once, for whichever notifying worker looks
        // next (none is kept by a worker that does not notify; a queue without one keeps the row
        // until its job is pruned). The notices are made first, for every job named, and kept only
        // for those the cancel ended.
        let jobs: PostgresQuery = """
            SELECT id, left(source, 2048), attempt FROM imagepipe.jobs WHERE id = ANY(\(ids)::bigint[]) AND queue = \(location.queue)
            """
        var notices: [Int: JobNotice] = [:]
        for (id, source, attempt) in try await required("read the jobs to cancel", jobs, { try $0.decode((Int, String, Int).self) }) {
            let result = JobResult(
                source: source, status: .failed, error: ImagePipeError(.cancelled, "cancelled on request while it waited"),
                attempts: attempt)
            notices[id] = JobNotice(event: .cancelled, job: String(id), result: result)
        }
        // Per position: a job named twice is cancelled by its first mention (the second finds it
        // cancelled), and only that one's notice is kept.
        let named = ids.map { notices[$0] }
        let noticeIDs = named.map { $0?.id ?? "" }, bodies = named.map { $0.map { JSONLine.encode($0) } ?? "" }
        // The join reads each job's state before the cancel changes it (one snapshot for the statement).
        let query: PostgresQuery = """
            WITH asked AS (
                SELECT i.n, i.id, j.state AS before, j.queue, CASE WHEN j.id IS NOT NULL THEN imagepipe.cancel(i.id) END AS now_state
                FROM unnest(\(ids)::bigint[]) WITH ORDINALITY AS i(id, n)
                LEFT JOIN imagepipe.jobs AS j ON j.id = i.id AND j.queue = \(location.queue)
            ), kept AS (
                INSERT INTO imagepipe.notices (id, job_id, queue, body, due_at)
                SELECT k.notice_id, a.id, a.queue, k.body, now()
                FROM asked AS a
                JOIN unnest(\(noticeIDs)::text[], \(bodies)::text[]) WITH ORDINALITY AS k(notice_id, body, n) ON k.n = a.n
                WHERE a.now_state = 'cancelled' AND k.notice_id <> ''
            )
            SELECT before, now_state FROM asked ORDER BY n
            """
        return try await required("cancel", query, { try $0.decode((String?, String?).self) }).map { before, done in
            switch (before, done) {
            case (nil, _): .notFound
            case (_, "cancelled"): .cancelled
            case (_, "requested"): .requested
            case (let state?, _): .finished(state)
            }
        }
    }

    /// Puts failed jobs (all, or those with the given IDs, which may also name cancelled ones)
    /// back to wait, with their attempts and errors cleared; returns the IDs put back.
    public func retryFailed(ids: [Int]?) async throws(ImagePipeError) -> [Int] {
        let queue = location.queue
        let query: PostgresQuery = """
            WITH back AS (
                UPDATE imagepipe.jobs SET state = 'waiting', attempt = 0, run_at = now(), finished_at = NULL,
                    result = NULL, errors = '[]', cancel_requested_at = NULL
                WHERE queue = \(queue) AND (\(ids)::bigint[] IS NULL AND state = 'failed'
                                            OR id = ANY(\(ids)::bigint[]) AND state IN ('failed', 'cancelled'))
                RETURNING id
            )
            SELECT id FROM back ORDER BY id
            """
        let back = try await required("retry", query, { try $0.decode(Int.self) })
        if !back.isEmpty { await notifyWaiting(queue) }
        return back
    }

    /// Deletes done, failed and cancelled jobs of `queue` that finished longer than `age` ago, in slices so
    /// that no statement holds many rows; returns how many.
    @discardableResult
    public func prune(queue: String, olderThan age: Duration) async -> Int {
        var total = 0
        while true {
            let query: PostgresQuery = """
                WITH old AS (
                    DELETE FROM imagepipe.jobs WHERE id IN (
                        SELECT id FROM imagepipe.jobs
                        WHERE queue = \(queue) AND state IN ('done', 'failed', 'cancelled')
                          AND finished_at < now() - make_interval(secs => \(age.timeInterval))
                        LIMIT 10000)
                    RETURNING 1
                )
                SELECT count(*)::bigint FROM old
                """
            guard let deleted = await once("prune", query, { try $0.decode(Int.self) })?.first else { return total }
            total += deleted
            if deleted < 10_000 { break }
        }
        if total > 0 { logger.info("pruned finished jobs", metadata: ["queue": "\(queue)", "deleted": "\(total)"]) }
        return total
    }

    /// Jobs of `queue` waiting (due or not); nil when the database cannot be reached.
    func waitingCount(queue: String) async -> Int? {
        await once("count", "SELECT count(*)::bigint FROM imagepipe.jobs WHERE queue = \(queue) AND state = 'waiting'", { try $0.decode(Int.self) })?
            .first
    }

    /// The jobs waiting in `queue`, or why the database did not answer (a readiness check).
    func checkedWaitingCount(queue: String) async throws(ImagePipeError) -> Int {
        try await required(
            "counting waiting jobs", "SELECT count(*)::bigint FROM imagepipe.jobs WHERE queue = \(queue) AND state = 'waiting'",
            { try $0.decode(Int.self) }
        ).first ?? 0
    }

    private static func bindings(_ queue: String, _ state: String, _ limit: Int) -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 3)
        bindings.append(queue)
        bindings.append(state)
        bindings.append(limit)
        return bindings
    }

    /// One attempt at a statement a command needs; failures become errors.
    private func required<T: Sendable>(
        _ what: String, _ query: PostgresQuery,
        _ decode: @escaping @Sendable (PostgresRow) throws -> T
    ) async throws(ImagePipeError) -> [T] {
        do {
            return try await rows(query, decode)
        } catch {
            let failure = DatabaseFailure(error)
            throw ImagePipeError(failure.asError.code, "\(what) failed on \(location): \(failure.asError.reason)")
        }
    }
}
