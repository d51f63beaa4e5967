// The notice actions of the state machine, carried out: hand-overs to the notifier, whose answers come back as events.
import ImagePipe
import Logging

extension WorkerLoop {
    /// Hands a kept notice to the notifier and reports when it is taken and when it is settled.
    /// With room in the notifier (a receiver that keeps up) it is taken at once, in this turn of
    /// the loop, and its place comes back with the next batch of events; else a task of its own
    /// waits for room (the state machine counts the wait against its job's place, so the worker
    /// claims no more than the receiver takes). A stop past its time cancels the wait; the notice
    /// stays kept.
    func send(_ notice: JobNotice, in group: inout DiscardingTaskGroup) {
        guard let notifier else { return }
        let settled = settledCallback(notifier)
        if notifier.trySend(notice, settled: settled) {
            events.send(.noticeAccepted(notice.id))
            return
        }
        group.addTask {
            await notifier.send(notice, settled: settled)
            self.events.send(.noticeAccepted(notice.id))
        }
    }

    /// Hands taken-over notices to the notifier, never waiting: upkeep and the stop go on while a
    /// receiver is down. Those it has no room for are reported, for the store to keep.
    func offer(_ notices: [JobNotice]) {
        guard let notifier else { return }
        let settled = settledCallback(notifier)
        let refused = notices.filter { !notifier.trySend($0, settled: settled) }
        if !refused.isEmpty { events.send(.noticesRefused(refused.map(\.id))) }
        guard notices.count > refused.count else { return }
        logger.notice(
            "sending the notifications a stopped worker left", metadata: ["notifications": .stringConvertible(notices.count - refused.count)])
    }

    /// Tells the state machine of a notice delivered or given up, on the notifier's threads, with
    /// the room it has then.
    private func settledCallback(_ notifier: any JobNotifier) -> @Sendable (String) -> Void {
        { [events] id in events.send(.noticeSettled(id, room: notifier.room)) }
    }
}
