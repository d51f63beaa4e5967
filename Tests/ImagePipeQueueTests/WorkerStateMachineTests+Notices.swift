// The worker state machine's notices stage and claim refusals, with plain values: kept, sent, forgotten, taken over, held and left at a stop.
import Foundation
import ImagePipe
import ImagePipeQueue
import Testing

extension WorkerStateMachineTests {
    /// A machine of a worker that notifies, whose notifier has room for `noticeRoom` when it starts
    /// and whose stop gives the notices `grace`.
    func notifying(room: Int = 4, noticeRoom: Int = 256, grace: Duration = .seconds(2), exitWhenEmpty: Bool = false) -> Machine {
        Machine(
            limits: .init(
                room: room, holdLimit: 12, retry: .init(maxAttempts: 3, baseDelay: .seconds(10), maxDelay: .seconds(10)),
                pollInterval: .seconds(1), exitWhenEmpty: exitWhenEmpty, noticeRoom: noticeRoom, noticeGrace: grace),
            now: t0)
    }

    func notice(_ job: String) -> JobNotice {
        JobNotice(event: .done, job: job, result: done(job), id: "notice-" + job)
    }

    func takeOver(_ actions: [Machine.Action]) -> Int? {
        for case .takeOverNotices(let limit) in actions { return limit }
        return nil
    }

    /// Opens a notifying machine whose store has nothing to take over, and runs `ids`.
    func runningNotifying(_ machine: inout Machine, claiming ids: ClosedRange<Int>) {
        #expect(takeOver(machine.handle(.opened, now: t0, available: 100)) == 256)
        let count = claim(machine.handle(.noticesTakenOver([]), now: t0, available: 100)) ?? 0
        _ = machine.handle(.claimed(Array(jobs(ids).prefix(count)), asked: count), now: t0, available: 100)
    }

    @Test func aWorkerThatNotifiesTakesOverWhatDeadWorkersLeftBeforeItsFirstClaim() {
        var machine = notifying(noticeRoom: 3)
        let opened = machine.handle(.opened, now: t0, available: 100)
        #expect(takeOver(opened) == 3, "as many as the notifier has room for")
        #expect(claim(opened) == nil && machine.lifecycle == .opening, "no claim before the notices left go out")
        let orphans = [notice("x"), notice("y"), notice("z")]
        let taken = machine.handle(.noticesTakenOver(orphans), now: t0, available: 100)
        #expect(taken.first == .offerNotices(orphans) && claim(taken) == 4, "offered first, then the claim")
        #expect(machine.noticesUndelivered == (waiting: 0, sending: 3))
    }

    @Test func aTakeOverIsLimitedByTheNotifiersRoomAndGoesOnAsRoomComesBack() {
        var machine = notifying(noticeRoom: 2)
        _ = machine.handle(.opened, now: t0, available: 100)
        // The store had at least as many as asked: it may have more, taken once there is room.
        _ = machine.handle(.noticesTakenOver([notice("x"), notice("y")]), now: t0, available: 100)
        #expect(takeOver(machine.handle(.wake, now: t0, available: 100)) == nil, "the notifier is full")
        let delivered = machine.handle(.noticeSettled("notice-x", room: 1), now: t0, available: 100)
        #expect(delivered.contains(.forgetNotices(["notice-x"])))
        #expect(takeOver(delivered) == 1, "one place came back: one more")
        // The store had fewer than asked: drained until the next upkeep.
        _ = machine.handle(.noticesTakenOver([]), now: t0, available: 100)
        #expect(takeOver(machine.handle(.noticeSettled("notice-y", room: 2), now: t0, available: 100)) == nil)
        #expect(takeOver(machine.handle(.maintained(noticeRoom: 2), now: t0, available: 100)) == 2, "upkeep may have found more")
        // The notifier filled up between the room reported and the hand-over: left for later.
        let refused = machine.handle(.noticesTakenOver([notice("v"), notice("w")]), now: t0, available: 100)
        #expect(refused.contains(.offerNotices([notice("v"), notice("w")])))
        #expect(machine.handle(.noticesRefused(["notice-w"]), now: t0, available: 100).contains(.leaveNotices(["notice-w"])))
        #expect(machine.noticesUndelivered == (waiting: 0, sending: 1))
        #expect(takeOver(machine.handle(.noticeSettled("notice-v", room: 2), now: t0, available: 100)) == 2, "the refused one again")
    }

    @Test func aKeptNoticeIsSentHoldsItsJobsPlaceUntilTakenAndIsForgottenOnceSettled() {
        var machine = notifying(room: 2)
        runningNotifying(&machine, claiming: 1...2)
        for id in ["1", "2"] { _ = machine.handle(.finished(id, done(id)), now: t0, available: 100) }
        // Recorded: the notice is kept, then the settlement comes.
        #expect(machine.handle(.noticeKept(notice("1")), now: t0, available: 100).contains(.sendNotice(notice("1"))))
        _ = machine.handle(.noticeKept(notice("2")), now: t0, available: 100)
        _ = machine.handle(.settled("1", .recorded), now: t0, available: 100)
        _ = machine.handle(.settled("2", .recorded), now: t0, available: 100)
        #expect(machine.held.isEmpty && machine.done == 2)
        // The receiver is slow: both notices wait for room, each in its job's place.
        #expect(machine.room(now: t0) == 0)
        #expect(claim(machine.handle(.wake, now: t0, available: 100)) == nil, "no more than the receiver takes")
        #expect(claim(machine.handle(.noticeAccepted("notice-1"), now: t0, available: 100)) == 1, "taken by the notifier: its place is free")
        let settled = machine.handle(.noticeSettled("notice-1", room: 256), now: t0, available: 100)
        #expect(settled.contains(.forgetNotices(["notice-1"])))
        #expect(machine.noticesUndelivered == (waiting: 1, sending: 0))
    }

    @Test func aNoticeOfAJobHandedOffToTheStoreHoldsOnlyAPlaceOfTheHoldLimitAsItsJobDid() {
        var machine = Machine(
            limits: .init(room: 2, holdLimit: 3, pollInterval: .seconds(1), noticeRoom: 256, noticeGrace: .seconds(2)), now: t0)
        runningNotifying(&machine, claiming: 1...2)
        // Both jobs' outputs wait for one round of fsyncs, which settles them together.
        for id in ["1", "2"] { _ = machine.handle(.handedOff(id), now: t0, available: 100) }
        for id in ["1", "2"] { _ = machine.handle(.finished(id, done(id)), now: t0, available: 100) }
        for id in ["1", "2"] { _ = machine.handle(.noticeKept(notice(id)), now: t0, available: 100) }
        for id in ["1", "2"] { _ = machine.handle(.settled(id, .recorded), now: t0, available: 100) }
        #expect(machine.held.isEmpty && machine.noticesUndelivered == (waiting: 2, sending: 0))
        // Room for both, as for their jobs; the hold limit of 3 counts the two notices.
        #expect(machine.room(now: t0) == 1, "claims go on while the notifier takes the notices of a round")
        _ = machine.handle(.noticeAccepted("notice-1"), now: t0, available: 100)
        #expect(machine.room(now: t0) == 2)
    }

    @Test func noticesSettledWhileTheStoreForgetsAreForgottenTogetherInOneCallOnceItIsDone() {
        var machine = notifying()
        runningNotifying(&machine, claiming: 1...4)
        for id in ["1", "2", "3", "4"] {
            _ = machine.handle(.noticeKept(notice(id)), now: t0, available: 100)
            _ = machine.handle(.noticeAccepted("notice-" + id), now: t0, available: 100)
        }
        func forgets(_ actions: [Machine.Action]) -> [[String]] { actions.compactMap { if case .forgetNotices(let ids) = $0 { ids } else { nil } } }
        // A lone notice is not held back.
        #expect(forgets(machine.handle(.noticeSettled("notice-1", room: 256), now: t0, available: 100)) == [["notice-1"]])
        #expect(forgets(machine.handle(.noticeSettled("notice-2", room: 256), now: t0, available: 100)) == [], "the store is forgetting")
        #expect(forgets(machine.handle(.noticeSettled("notice-3", room: 256), now: t0, available: 100)) == [])
        #expect(forgets(machine.handle(.noticesForgotten, now: t0, available: 100)) == [["notice-2", "notice-3"]], "both in one call")
        #expect(forgets(machine.handle(.noticesForgotten, now: t0, available: 100)) == [], "nothing settled meanwhile")
        #expect(forgets(machine.handle(.noticeSettled("notice-4", room: 256), now: t0, available: 100)) == [["notice-4"]])
        #expect(machine.noticesUndelivered == (waiting: 0, sending: 0))
    }

    @Test func noticesSettledWhileTheStoreForgetsAreStillForgottenWhenTheLoopEnds() {
        var machine = notifying(exitWhenEmpty: true)
        runningNotifying(&machine, claiming: 1...2)
        for id in ["1", "2"] {
            _ = machine.handle(.finished(id, done(id)), now: t0, available: 100)
            _ = machine.handle(.noticeKept(notice(id)), now: t0, available: 100)
            _ = machine.handle(.settled(id, .recorded), now: t0, available: 100)
        }
        _ = machine.handle(.claimed([], asked: 4), now: t0, available: 100)
        _ = machine.handle(.emptyChecked(QueueRemainder(due: 0)), now: t0, available: 100)
        #expect(machine.lifecycle == .notifying)
        _ = machine.handle(.noticeSettled("notice-1", room: 256), now: t0, available: 100)
        // The last one settles while the first is being forgotten: it goes before the loop ends.
        #expect(
            machine.handle(.noticeSettled("notice-2", room: 256), now: t0, available: 100) == [.forgetNotices(["notice-2"]), .finish])
    }

    @Test func aNoticeSettledBeforeItsHandOverReturnsIsForgottenAndNotCountedAgain() {
        var machine = notifying()
        runningNotifying(&machine, claiming: 1...1)
        _ = machine.handle(.noticeKept(notice("1")), now: t0, available: 100)
        _ = machine.handle(.noticeSettled("notice-1", room: 256), now: t0, available: 100)
        _ = machine.handle(.noticeAccepted("notice-1"), now: t0, available: 100)
        #expect(machine.noticesUndelivered == (waiting: 0, sending: 0))
    }

    @Test func aStopWithNoticesUndeliveredHoldsThemForTheRestOfTheStopThenLeavesThem() {
        var machine = notifying(grace: .seconds(2))
        runningNotifying(&machine, claiming: 1...2)
        _ = machine.handle(.finished("1", done("1")), now: t0, available: 100)
        _ = machine.handle(.noticeKept(notice("1")), now: t0, available: 100)
        _ = machine.handle(.settled("1", .recorded), now: t0, available: 100)
        _ = machine.handle(.noticeAccepted("notice-1"), now: t0, available: 100)
        // The stop is asked for at t0 + 1 s, while job 2 runs: its notice is kept at t0 + 2 s.
        _ = machine.handle(.gracefulShutdown, now: t0 + .seconds(1), available: 100)
        _ = machine.handle(.finished("2", done("2")), now: t0 + .seconds(2), available: 100)
        _ = machine.handle(.noticeKept(notice("2")), now: t0 + .seconds(2), available: 100)
        let settled = machine.handle(.settled("2", .recorded), now: t0 + .seconds(2), available: 100)
        // Every job is settled: the notices get what is left of the stop's 2 s, counted from the request.
        #expect(settled == [.holdNotices(for: .seconds(1)), .wakeAt(t0 + .seconds(3))])
        #expect(machine.lifecycle == .notifying)
        _ = machine.handle(.noticeAccepted("notice-2"), now: t0 + .seconds(2), available: 100)
        #expect(
            machine.handle(.noticeSettled("notice-1", room: 256), now: t0 + .seconds(2), available: 100) == [
                .forgetNotices(["notice-1"]), .wakeAt(t0 + .seconds(3)),
            ])
        // Time is up with one undelivered: left to the store for the next worker, and said.
        #expect(
            machine.handle(.tick(t0 + .seconds(3)), now: t0 + .seconds(3), available: 100) == [
                .leaveNotices(["notice-2"]), .note(.noticesLeft(1)), .finish,
            ])
        #expect(machine.lifecycle == .closed)
    }

    @Test func theLastNoticesDeliveredInTimeEndTheLoopAtOnce() {
        var machine = notifying(exitWhenEmpty: true)
        runningNotifying(&machine, claiming: 1...1)
        _ = machine.handle(.finished("1", done("1")), now: t0, available: 100)
        _ = machine.handle(.noticeKept(notice("1")), now: t0, available: 100)
        _ = machine.handle(.settled("1", .recorded), now: t0, available: 100)
        _ = machine.handle(.claimed([], asked: 4), now: t0, available: 100)
        // The queue is worked off: the stop's time counts from the end.
        let empty = machine.handle(.emptyChecked(QueueRemainder(due: 0)), now: t0 + .seconds(5), available: 100)
        #expect(empty == [.note(.queueEmpty(later: 0)), .holdNotices(for: .seconds(2)), .wakeAt(t0 + .seconds(7))])
        #expect(
            machine.handle(.noticeSettled("notice-1", room: 256), now: t0 + .seconds(6), available: 100) == [.forgetNotices(["notice-1"]), .finish])
    }

    /// An empty check that ended a dead worker's job kept its notice: the worker takes it over and
    /// sends it before it calls the queue empty, instead of stopping with it left in the store (a
    /// `--exit-when-empty` worker on PostgreSQL once did, and its receiver heard nothing).
    @Test func anEmptyCheckThatKeptNoticesTakesThemOverBeforeTheQueueIsEmpty() {
        var machine = notifying(exitWhenEmpty: true)
        runningNotifying(&machine, claiming: 1...1)
        _ = machine.handle(.finished("1", done("1")), now: t0, available: 100)
        _ = machine.handle(.settled("1", .recorded), now: t0, available: 100)
        _ = machine.handle(.claimed([], asked: 4), now: t0, available: 100)
        let kept = machine.handle(.emptyChecked(QueueRemainder(due: 0, noticesKept: 1)), now: t0 + .seconds(1), available: 100)
        #expect(kept.contains { if case .takeOverNotices = $0 { true } else { false } }, "\(kept)")
        #expect(!kept.contains(.note(.queueEmpty(later: 0))) && machine.lifecycle != .closed)
        let crashed = JobNotice(event: .failed, job: "9", result: JobResult(source: "9.jpg", status: .failed), id: "notice-9")
        #expect(machine.handle(.noticesTakenOver([crashed]), now: t0 + .seconds(1), available: 100).contains(.offerNotices([crashed])))
        // The next check finds nothing more: the queue is empty, and the loop waits for the notice.
        let empty = machine.handle(.emptyChecked(QueueRemainder(due: 0)), now: t0 + .seconds(2), available: 100)
        #expect(empty.first == .note(.queueEmpty(later: 0)) && !empty.contains(.finish), "\(empty)")
        #expect(
            machine.handle(.noticeSettled("notice-9", room: 256), now: t0 + .seconds(3), available: 100).contains(.finish))
    }

    @Test func aNoticeWaitingForRoomIsWaitedForPastTheStopsTimeUntilTheLoopIsCancelled() {
        var machine = notifying(grace: .seconds(1))
        runningNotifying(&machine, claiming: 1...1)
        _ = machine.handle(.finished("1", done("1")), now: t0, available: 100)
        _ = machine.handle(.noticeKept(notice("1")), now: t0, available: 100)
        _ = machine.handle(.gracefulShutdown, now: t0, available: 100)
        _ = machine.handle(.settled("1", .recorded), now: t0, available: 100)
        // Its producer waits in the notifier: leaving it now would race with its hand-over.
        #expect(!machine.handle(.tick(t0 + .seconds(1)), now: t0 + .seconds(1), available: 100).contains(.finish))
        let cancelled = machine.handle(.stopNow(.cancelled), now: t0 + .seconds(1), available: 100)
        #expect(cancelled == [.leaveNotices(["notice-1"]), .note(.noticesLeft(1)), .finish])
    }

    @Test func aWorkerThatDoesNotNotifyIgnoresNoticesAndTakesNoneOver() {
        var machine = machine()
        #expect(takeOver(machine.handle(.opened, now: t0, available: 100)) == nil)
        #expect(machine.handle(.noticeKept(notice("1")), now: t0, available: 100).allSatisfy { if case .sendNotice = $0 { false } else { true } })
        #expect(takeOver(machine.handle(.maintained(noticeRoom: 256), now: t0, available: 100)) == nil)
    }

    // MARK: - Refused at their claim

    @Test func aJobRefusedAtItsClaimIsDiscardedWithItsReasonWithoutRunning() {
        var machine = machine()
        let opened = machine.handle(.opened, now: t0, available: 100)
        #expect(claim(opened) == 4)
        let invalid = ImagePipeError(.invalidJobOptions, "bad.jpg.options.json: not [1.5,0.5]")
        var bad = job("bad")
        bad.refusal = invalid
        let actions = machine.handle(.claimed([job("1"), bad], asked: 4), now: t0, available: 99)
        #expect(actions.contains(.submit([job("1")])), "only the runnable one runs")
        let result = JobResult(source: "bad", status: .failed, error: invalid, attempts: 1)
        #expect(actions.contains(.settle(bad, .discard, result)), "discarded with its reason, one attempt")
        #expect(machine.inFlight == 2 && machine.room(now: t0) == 3, "being settled, it holds no place of the room")
        _ = machine.handle(.settled("bad", .recorded), now: t0, available: 100)
        #expect(machine.failed == 1 && machine.held.keys.sorted() == ["1"])
    }

    @Test func aJobRefusedWhileStoppingIsStillDiscardedAndTheOthersGoBack() {
        var machine = machine()
        _ = machine.handle(.opened, now: t0, available: 100)
        _ = machine.handle(.gracefulShutdown, now: t0, available: 100)
        var bad = job("bad")
        bad.refusal = ImagePipeError(.invalidJobOptions, "unusable")
        let actions = machine.handle(.claimed([job("1"), bad], asked: 4), now: t0, available: 99)
        #expect(actions.contains(.release([job("1")], .claimedWhileStopping)))
        #expect(actions.contains { if case .settle(bad, .discard, _) = $0 { true } else { false } })
        #expect(!actions.contains(.finish), "its settlement is waited for")
        #expect(machine.handle(.settled("bad", .recorded), now: t0, available: 100) == [.finish])
    }
}
