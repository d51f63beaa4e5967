// A queue directory's notice store: the outbox in this worker's claim area, and the notices it took over from dead workers' areas.
import Foundation
import ImagePipe
import Synchronization

/// The ``NoticeStore`` of a ``DirectoryQueue``: each notice is a file in the claim area's outbox
/// (``ClaimArea/keep(_:for:)``), written before its job's record, and unlinked once delivered. A
/// worker that dies leaves its area, outbox and all, to the next worker's recovery, which moves the
/// notices whose record is written into its own outbox and hands them over here (``offer(_:)``).
///
/// The claim area's lock is this worker's claim on every notice in it: there is nothing to renew.
final class DirectoryOutbox: NoticeStore {
    private let area: ClaimArea
    /// Notices taken over from abandoned areas (or left by this worker), not yet handed to the loop.
    private let taken = Mutex<[JobNotice]>([])

    init(area: ClaimArea) { self.area = area }

    /// Notices to hand the loop at its next take-over.
    func offer(_ notices: [JobNotice]) {
        if !notices.isEmpty { taken.withLock { $0 += notices } }
    }

    func takeOver(limit: Int) async -> [JobNotice] {
        taken.withLock { taken in
            let first = Array(taken.prefix(max(0, limit)))
            taken.removeFirst(first.count)
            return first
        }
    }

    func forget(_ ids: [String]) async {
        await BlockingIO.run { [area] in
            for id in ids { area.forget(notice: id) }
        }
    }

    /// Notices this worker did not send now (no room in its notifier) are offered again at the next
    /// take-over; at a stop they stay in the area for the next worker.
    func leave(_ ids: [String]) async {
        let notices = await BlockingIO.run { [area] in area.keptNotices(ids) }
        offer(notices)
    }

    func hold(for duration: Duration) async {}
}
