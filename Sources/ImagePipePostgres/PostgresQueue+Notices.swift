// The PostgreSQL queue's notice store: the notices table, written with each result, held like claims, taken over from workers that stopped or died, forgotten in batches.
import Foundation
public import ImagePipe
public import ImagePipeQueue
import Logging
import Synchronization

/// The ``NoticeStore`` of a ``PostgresQueue``: `imagepipe.notices`, one row per notice, inserted by
/// the statement that records its job's result. A row is held by the worker that settled (or took
/// over) it until a due time, renewed at each upkeep and heartbeat like a lease: a worker that dies
/// stops renewing, and its notices are taken over a lease later.
public final class PostgresNotices: NoticeStore {
    let database: QueueDatabase
    let queue: String
    let lease: Duration
    let logger: Logger
    /// Notices delivered or given up, deleted together at the next upkeep or leave.
    private let forgotten = Mutex<[String]>([])
    /// Notices this worker holds (kept or taken over, not yet forgotten): renewed at each upkeep.
    private let held = Mutex<Set<String>>([])

    init(database: QueueDatabase, queue: String, lease: Duration, logger: Logger) {
        self.database = database
        self.queue = queue
        self.lease = lease
        self.logger = logger
    }

    /// Notices whose worker stopped or died before delivering them (their hold was not renewed for a lease).
    public func takeOver(limit: Int) async -> [JobNotice] {
        guard limit > 0 else { return [] }
        let bodies = await database.takeOverNotices(queue: queue, hold: lease, limit: min(100, limit)) ?? []
        var taken: [JobNotice] = []
        for body in bodies {
            do {
                taken.append(try JSONDecoder().decode(JobNotice.self, from: Data(body.utf8)))
            } catch {
                // Only this code writes the table; a row it cannot read would be a newer version's.
                logger.error("cannot read a kept notification; left for a worker that can", metadata: ["error": "\(error)"])
            }
        }
        held.withLock { $0.formUnion(taken.map(\.id)) }
        return taken
    }

    public func forget(_ ids: [String]) async {
        held.withLock { $0.subtract(ids) }
        forgotten.withLock { $0 += ids }
    }

    public func leave(_ ids: [String]) async {
        held.withLock { $0.subtract(ids) }
        await flushForgotten()
        await database.releaseNotices(ids)
    }

    /// Holds them for the rest of the stop and a lease more: upkeep has ended, heartbeats may have.
    public func hold(for duration: Duration) async {
        await renew(for: duration + lease)
    }

    /// Renews the hold on the notices this worker is still sending, as heartbeats renew leases.
    func renew(for hold: Duration? = nil) async {
        let ids = held.withLock { Array($0) }
        guard !ids.isEmpty else { return }
        await database.renewNotices(ids, hold: hold ?? lease)
    }

    /// Deletes the notices forgotten since the last time, in one statement; kept for the next
    /// time when the database cannot be reached.
    func flushForgotten() async {
        let ids = forgotten.withLock { ids in
            defer { ids.removeAll() }
            return ids
        }
        guard !ids.isEmpty else { return }
        if await !database.deleteNotices(ids) { forgotten.withLock { $0 += ids } }
    }

    /// A notice to keep with its job's result, held by this worker from now on.
    func keep(_ notice: JobNotice?) -> QueueDatabase.HeldNotice? {
        guard let notice else { return nil }
        held.withLock { _ = $0.insert(notice.id) }
        return QueueDatabase.HeldNotice(notice: notice, hold: lease)
    }

    /// Lets go of a notice whose job's result was not recorded (no row keeps it); returns `settlement`.
    func holding(_ notice: JobNotice?, _ settlement: Settlement) -> Settlement {
        if let notice, settlement != .recorded { held.withLock { _ = $0.remove(notice.id) } }
        return settlement
    }
}
