// The queue's kept notices: written with each result, taken over from workers that stopped or died, forgotten in batches.
import Foundation
public import ImagePipe
import ImagePipeQueue
import Logging
import Synchronization

extension PostgresQueue {
    /// Notices whose worker stopped or died before delivering them (their hold was not renewed for
    /// a lease), and those of jobs refused at their claim; none unless this worker notifies.
    public func takeOverNotices(limit: Int) async -> [JobNotice] {
        guard configuration.keepsNotices, limit > 0 else { return [] }
        let refused = refusedNotices.withLock { notices in
            let taken = Array(notices.prefix(limit))
            notices.removeFirst(taken.count)
            return taken
        }
        guard refused.count < limit else { return refused }
        let bodies =
            await database.takeOverNotices(queue: location.queue, hold: configuration.lease, limit: min(100, limit - refused.count)) ?? []
        var taken: [JobNotice] = []
        for body in bodies {
            do {
                taken.append(try JSONDecoder().decode(JobNotice.self, from: Data(body.utf8)))
            } catch {
                // Only this code writes the table; a row it cannot read would be a newer version's.
                logger.error("cannot read a kept notification; left for a worker that can", metadata: ["error": "\(error)"])
            }
        }
        heldNotices.withLock { $0.formUnion(taken.map(\.id)) }
        return refused + taken
    }

    public func forgetNotice(_ id: String) {
        heldNotices.withLock { _ = $0.remove(id) }
        forgotten.withLock { $0.append(id) }
    }

    public func leaveNotices(_ ids: [String]) async {
        heldNotices.withLock { $0.subtract(ids) }
        await flushForgottenNotices()
        await database.releaseNotices(ids)
    }

    /// Renews the hold on the notices this worker is still sending, as heartbeats renew leases: a
    /// worker that dies stops renewing, and its notices are taken over a lease later.
    func renewHeldNotices(for hold: Duration? = nil) async {
        let ids = heldNotices.withLock { Array($0) }
        guard !ids.isEmpty else { return }
        await database.renewNotices(ids, hold: hold ?? configuration.lease)
    }

    /// Holds them for the rest of the stop and a lease more: upkeep has ended, heartbeats may have.
    public func holdNotices(for duration: Duration) async {
        await renewHeldNotices(for: duration + configuration.lease)
    }

    /// Deletes the notices forgotten since the last time, in one statement; kept for the next
    /// time when the database cannot be reached.
    func flushForgottenNotices() async {
        let ids = forgotten.withLock { ids in
            defer { ids.removeAll() }
            return ids
        }
        guard !ids.isEmpty else { return }
        if await !database.deleteNotices(ids) { forgotten.withLock { $0 += ids } }
    }

    /// A notice as the table keeps it, held by this worker from now on.
    func kept(_ notice: JobNotice?) -> QueueDatabase.KeptNotice? {
        guard let notice, configuration.keepsNotices else { return nil }
        heldNotices.withLock { _ = $0.insert(notice.id) }
        return QueueDatabase.KeptNotice(id: notice.id, body: Self.body(notice), hold: configuration.lease)
    }

    /// Lets go of a notice whose job's result was not recorded (no row keeps it); returns `settlement`.
    func holding(_ notice: JobNotice?, _ settlement: Settlement) -> Settlement {
        if let notice, settlement != .recorded { heldNotices.withLock { _ = $0.remove(notice.id) } }
        return settlement
    }

    /// The notice's JSON, as the table keeps it and a taken-over notice is read back from.
    static func body(_ notice: JobNotice) -> String { JSONLine.encode(notice) }
}
