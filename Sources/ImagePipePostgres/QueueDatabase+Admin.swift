// What producers and operators do: enqueue sources, count jobs, put discarded jobs back, delete old ones.
import Foundation
public import ImagePipe
import PostgresNIO

extension QueueDatabase {
    /// The state of a queue.
    public struct Status: Sendable, Equatable {
        /// Jobs per state: `waiting`, `running`, `done`, `discarded` (states without jobs left out).
        public var counts: [String: Int]
        /// How long the oldest due job has waited to be claimed, in seconds; nil when none waits.
        public var oldestWaitingSeconds: Double?
        /// Jobs finished (done or discarded) in the last minute, per second.
        public var finishedPerSecond: Double
    }

    /// Adds one job per source through `imagepipe.enqueue`, in one statement; returns each job's ID
    /// in order, nil where `unique` found the source already waiting or running.
    public func enqueue(_ sources: [String], unique: Bool) async throws(ImagePipeError) -> [Int?] {
        guard !sources.isEmpty else { return [] }
        let query: PostgresQuery = """
            SELECT imagepipe.enqueue(s.source, \(location.queue), \(unique))
            FROM unnest(\(sources)::text[]) WITH ORDINALITY AS s(source, n) ORDER BY s.n
            """
        return try await required("enqueue", query, { try $0.decode(Int?.self) })
    }

    /// Counts by state, the oldest due job's wait and the rate over the last minute.
    public func status() async throws(ImagePipeError) -> Status {
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
            WHERE queue = \(queue) AND state IN ('done', 'discarded') AND finished_at > now() - interval '1 minute'
            """, { try $0.decode(Int.self) })
        return Status(
            counts: Dictionary(uniqueKeysWithValues: counts), oldestWaitingSeconds: oldest.first ?? nil,
            finishedPerSecond: Double(recent.first ?? 0) / 60)
    }

    /// Puts discarded jobs (all, or those with the given IDs) back to wait, with their attempts and
    /// errors cleared; returns how many.
    public func retryDiscarded(ids: [Int]?) async throws(ImagePipeError) -> Int {
        let queue = location.queue
        let query: PostgresQuery = """
            WITH back AS (
                UPDATE imagepipe.jobs SET state = 'waiting', attempt = 0, run_at = now(), finished_at = NULL,
                    result = NULL, errors = '[]'
                WHERE queue = \(queue) AND state = 'discarded' AND (\(ids)::bigint[] IS NULL OR id = ANY(\(ids)::bigint[]))
                RETURNING id
            )
            SELECT count(*)::bigint FROM back
            """
        let count = try await required("retry", query, { try $0.decode(Int.self) }).first ?? 0
        if count > 0 { await notifyWaiting(queue) }
        return count
    }

    /// Deletes done and discarded jobs of `queue` that finished longer than `age` ago, in slices so
    /// that no statement holds many rows; returns how many.
    @discardableResult
    public func prune(queue: String, olderThan age: Duration) async -> Int {
        var total = 0
        while true {
            let query: PostgresQuery = """
                WITH old AS (
                    DELETE FROM imagepipe.jobs WHERE id IN (
                        SELECT id FROM imagepipe.jobs
                        WHERE queue = \(queue) AND state IN ('done', 'discarded')
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
