// The notices stage of the worker state machine: kept with each record, sent, forgotten once settled, taken over from dead workers, left at the stop.
import ImagePipe

extension WorkerStateMachine {
    /// The notices this worker is responsible for, once their jobs' records (and the notices with
    /// them) are kept by the queue's ``NoticeStore``: "recorded, then notified".
    ///
    /// A notice of this worker's own job waits for room in the notifier while the receiver is slow,
    /// and holds the place its job held: a place of the room, or only one of the hold limit for a
    /// job whose outputs were handed to the store (it held no image data, and a round of fsyncs
    /// settles many such jobs at once, whose notices must not stop claims while the notifier takes
    /// them). So the worker claims no more than the receiver takes. Notices taken over from workers
    /// that stopped or died never wait: they are taken only as many as the notifier has room for,
    /// and those it has no room for are left to the store for a later upkeep.
    ///
    /// Settled notices are forgotten in batches, one call of the store at a time: with a receiver
    /// that keeps up, a notice settles for every job recorded, and a call each would be a hop to the
    /// blocking-I/O lanes each.
    struct Notices {
        /// Kept with their jobs' records, waiting for the notifier to take them; each true when it
        /// holds a place of the room (its job did), false when only one of the hold limit.
        var waiting: [String: Bool] = [:]
        /// Taken by the notifier, not yet delivered or given up.
        var sending: Set<String> = []
        /// Delivered or given up while the store was forgetting others: forgotten together once it
        /// is done, in one call (a queue directory's unlinks in one hop to the blocking-I/O lanes).
        var settled: [String] = []
        /// Whether the store is forgetting a batch now.
        var forgetting = false
        /// How many notices the notifier takes now, as last reported.
        var room: Int
        /// Where taking over the store's orphaned notices stands.
        var takeOver = TakeOver.mayHaveMore

        enum TakeOver: Equatable {
            /// The store may hold notices this worker could take over.
            case mayHaveMore
            /// A take-over is under way, for this many.
            case asking(Int)
            /// The last take-over found fewer than it asked for: nothing more until the next upkeep.
            case drained
        }

        /// Every notice not yet delivered or given up.
        var undelivered: [String] { sending.union(waiting.keys).sorted() }

        /// Notices waiting that hold a place of the room.
        var waitingInRoom: Int { waiting.values.count(where: \.self) }
    }

    /// Whether this worker notifies (`--notify-url`).
    var notifies: Bool { limits.noticeRoom != nil }

    /// Handles the notice stage's events.
    mutating func handleNotice(_ event: Event, now: Instant) -> [Action] {
        switch event {
        case .noticeKept(let notice):
            guard notifies else { return [] }
            // Its job is still held: the settlement that kept the notice is reported after it.
            notices.waiting[notice.id] = held[notice.job]?.holdsRoom ?? false
            return [.sendNotice(notice)]
        case .noticeAccepted(let id):
            // Settled before its hand-over returned (a receiver that answers at once): nothing to move.
            if notices.waiting.removeValue(forKey: id) != nil { notices.sending.insert(id) }
            return []
        case .noticeSettled(let id, let room):
            notices.waiting.removeValue(forKey: id)
            notices.sending.remove(id)
            notices.room = room
            notices.settled.append(id)
            return forgetSettledNotices() + takeOverNotices()
        case .noticesForgotten:
            notices.forgetting = false
            return forgetSettledNotices()
        case .maintained(let room):
            notices.room = room
            if notices.takeOver == .drained { notices.takeOver = .mayHaveMore }
            return takeOverNotices()
        case .noticesTakenOver(let taken):
            let asked: Int
            if case .asking(let count) = notices.takeOver { asked = count } else { asked = taken.count }
            notices.takeOver = taken.count >= asked && !taken.isEmpty ? .mayHaveMore : .drained
            notices.room = max(0, notices.room - taken.count)
            for notice in taken { notices.sending.insert(notice.id) }
            if case .opening(takingOverNotices: true) = life { life = .running(Running()) }
            return taken.isEmpty ? [] : [.offerNotices(taken)]
        case .noticesRefused(let ids):
            // The notifier filled up meanwhile: they stay with the store, for a later upkeep.
            notices.sending.subtract(ids)
            notices.room = 0
            notices.takeOver = .mayHaveMore
            return ids.isEmpty ? [] : [.leaveNotices(ids)]
        default:
            return []
        }
    }

    /// Hands the store every notice settled since its last forget, unless one is under way (the
    /// notices settled meanwhile wait for it) or `evenIfForgetting` (the loop ends: it waits for
    /// every forget before it closes the queue).
    mutating func forgetSettledNotices(evenIfForgetting: Bool = false) -> [Action] {
        guard !notices.settled.isEmpty, evenIfForgetting || !notices.forgetting else { return [] }
        defer { notices.settled.removeAll() }
        notices.forgetting = true
        return [.forgetNotices(notices.settled)]
    }

    /// Asks the store for the notices stopped or dead workers left, as many as the notifier has
    /// room for, unless one ask is under way or the last found the store drained.
    mutating func takeOverNotices() -> [Action] {
        guard notifies, notices.takeOver == .mayHaveMore, notices.room > 0 else { return [] }
        switch life {
        case .closed, .stoppingNow: return []
        case .opening, .running, .draining, .notifying: break
        }
        notices.takeOver = .asking(notices.room)
        return [.takeOverNotices(limit: notices.room)]
    }

    /// Every job is settled or given back: ends at once, or, with notices still going out, holds
    /// them with the store for the rest of the stop's time (counted from when the stop was asked
    /// for, or from now when the loop ends by itself) and waits for them.
    mutating func finishOrNotify(now: Instant, stopRequestedAt: Instant?) -> [Action] {
        guard notifies, !notices.undelivered.isEmpty else { return finish() }
        let until = (stopRequestedAt ?? now) + limits.noticeGrace
        life = .notifying(until: until)
        return [.holdNotices(for: max(.zero, until - now))] + lookWhileNotifying(now: now, until: until)
    }

    /// The last notices: waited for until delivered or the stop's time is up, then left to the
    /// store for the next worker. A notice still waiting for room in the notifier is waited for
    /// past that time (a stop that outlasts it cancels the loop, and then the wait ends too).
    mutating func lookWhileNotifying(now: Instant, until: Instant) -> [Action] {
        if notices.waiting.isEmpty && (notices.sending.isEmpty || now >= until) { return leaveNoticesAndFinish() }
        return now < until ? [.wakeAt(until)] : []
    }

    mutating func leaveNoticesAndFinish() -> [Action] {
        let left = notices.undelivered
        notices.waiting.removeAll()
        notices.sending.removeAll()
        return (left.isEmpty ? [] : [.leaveNotices(left), .note(.noticesLeft(left.count))]) + finish()
    }
}
