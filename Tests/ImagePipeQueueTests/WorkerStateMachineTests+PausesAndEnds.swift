// The worker state machine's pauses of claiming (a full or unreachable store) and its end when the queue is worked off.
import Foundation
import ImagePipe
import ImagePipeQueue
import Testing

extension WorkerStateMachineTests {
    // MARK: - Pauses

    @Test func aFullStoragePausesClaimingAndAStoredJobResumesIt() {
        var machine = machine(retry: .init(maxAttempts: 20, baseDelay: .seconds(1), maxDelay: .seconds(60)))
        running(&machine, claiming: 1...2)
        let first = machine.handle(.finished("1", failed("1", .storageFull, "No space left on device")), now: t0, available: 100)
        #expect(first.contains(.note(.paused(.seconds(5), code: .storageFull, error: "No space left on device"))))
        #expect(claim(first) == nil && machine.pausedUntil == t0 + .seconds(5))
        _ = machine.handle(.settled("1", .keptForRetry(after: .seconds(20))), now: t0, available: 100)
        // A second in a row lengthens the pause without another line.
        let second = machine.handle(.finished("2", failed("2", .storageFull)), now: t0, available: 100)
        #expect(!second.contains { if case .note = $0 { true } else { false } })
        #expect(machine.pausedUntil == t0 + .seconds(10))
        let paused = machine.handle(.settled("2", .keptForRetry(after: .seconds(20))), now: t0, available: 100)
        #expect(wakeAt(paused) == t0 + .seconds(1), "the safety-net poll comes first")
        #expect(claim(machine.handle(.wake, now: t0 + .seconds(9), available: 100)) == nil)
        #expect(wakeAt(machine.handle(.wake, now: t0 + .seconds(9), available: 100)) == t0 + .seconds(10), "the pause ends then")
        // The retries run, one is stored: claiming resumes.
        let rerun = machine.handle(.tick(t0 + .seconds(20)), now: t0 + .seconds(20), available: 100)
        #expect(rerun.contains(.rerun([job("1", attempt: 2), job("2", attempt: 2)])))
        #expect(machine.handle(.finished("1", done("1")), now: t0 + .seconds(21), available: 100).contains(.note(.resumed)))
    }

    @Test func aClaimAnsweredInAPauseGivesItsJobsBackAndOneAnsweredAfterItRunsThem() {
        var machine = machine(retry: .init(maxAttempts: 20, baseDelay: .seconds(1), maxDelay: .seconds(60)))
        running(&machine, claiming: 1...1)
        // The pipeline has room: the loop claims more while job 1 runs.
        let more = machine.handle(.wake, now: t0, available: 99)
        #expect(claim(more) == 3)
        _ = machine.handle(.finished("1", failed("1", .storageFull)), now: t0, available: 100)
        // The claim under way brings two jobs in the pause: they go back, the refused one is settled.
        var refused = job("4")
        refused.refusal = ImagePipeError(.invalidJobOptions, "4: unknown preset")
        let inPause = machine.handle(.claimed(jobs(2...3) + [refused], asked: 3), now: t0 + .seconds(1), available: 97)
        #expect(inPause.contains(.release(jobs(2...3), .claimedWhilePaused)), "\(inPause)")
        #expect(!inPause.contains { if case .submit = $0 { true } else { false } })
        #expect(inPause.contains { if case .settle(refused, .discard, _) = $0 { true } else { false } })
        #expect(machine.held.keys.sorted() == ["1", "4"], "jobs 1 and 4 are being settled")
        // Their release wakes the loop, and gives back their places: still no claim in the pause.
        #expect(claim(machine.handle(.wake, now: t0 + .seconds(2), available: 99)) == nil)
        #expect(claim(machine.handle(.roomReturned, now: t0 + .seconds(2), available: 99)) == nil)
        // After the pause, a claim's jobs run.
        #expect(claim(machine.handle(.tick(t0 + .seconds(5)), now: t0 + .seconds(5), available: 99)) == 3)
        let after = machine.handle(.claimed([job("5")], asked: 3), now: t0 + .seconds(5), available: 98)
        #expect(after.contains(.submit([job("5")])))
    }

    @Test func aShortClaimGivenBackInAPauseDoesNotCallTheQueueEmpty() {
        // Job 1 is discarded (its one attempt spent), so nothing is held, but claiming pauses.
        var machine = machine(retry: .init(maxAttempts: 1, baseDelay: .seconds(1), maxDelay: .seconds(60)), exitWhenEmpty: true)
        running(&machine, claiming: 1...1)
        #expect(claim(machine.handle(.wake, now: t0, available: 99)) == 3)
        _ = machine.handle(.finished("1", failed("1", .storageFull)), now: t0, available: 100)
        _ = machine.handle(.settled("1", .recorded), now: t0, available: 100)
        #expect(machine.held.isEmpty && machine.pausedUntil != nil)
        // One job of the three asked for, given back: the queue holds it, so it is not empty, and an
        // empty check beside the release could find it neither in the queue nor held.
        let short = machine.handle(.claimed([job("2")], asked: 3), now: t0 + .seconds(1), available: 99)
        #expect(short.contains(.release([job("2")], .claimedWhilePaused)))
        #expect(!short.contains { if case .checkEmpty = $0 { true } else { false } }, "\(short)")
    }

    @Test func aStoreThatStaysUnreachableThroughItsRetriesPausesClaimingUntilAJobIsStored() {
        var machine = machine(retry: .init(maxAttempts: 20, baseDelay: .seconds(1), maxDelay: .seconds(60)))
        running(&machine, claiming: 1...2)
        let first = machine.handle(.finished("1", failed("1", .storageUnavailable, "connection refused")), now: t0, available: 100)
        #expect(first.contains(.note(.paused(.seconds(5), code: .storageUnavailable, error: "connection refused"))))
        #expect(claim(first) == nil && machine.pausedUntil == t0 + .seconds(5))
        _ = machine.handle(.settled("1", .requeued), now: t0, available: 100)
        _ = machine.handle(.finished("2", failed("2", .storageUnavailable)), now: t0, available: 100)
        #expect(machine.pausedUntil == t0 + .seconds(10), "longer while it stays so")
        _ = machine.handle(.settled("2", .requeued), now: t0, available: 100)
        #expect(claim(machine.handle(.wake, now: t0 + .seconds(9), available: 100)) == nil)
        // The pause ends: one claim, whose job is stored, resumes claiming for good.
        let after = machine.handle(.tick(t0 + .seconds(10)), now: t0 + .seconds(10), available: 100)
        #expect(claim(after) == 4)
        _ = machine.handle(.claimed([job("3")], asked: 4), now: t0 + .seconds(10), available: 99)
        #expect(machine.handle(.finished("3", done("3")), now: t0 + .seconds(11), available: 100).contains(.note(.resumed)))
        #expect(machine.pausedUntil == nil)
        // A failure that says nothing about the store does not pause.
        _ = machine.handle(.settled("3", .recorded), now: t0 + .seconds(11), available: 100)
        _ = machine.handle(.claimed([job("4")], asked: 4), now: t0 + .seconds(11), available: 99)
        _ = machine.handle(.finished("4", failed("4", .corruptImage)), now: t0 + .seconds(11), available: 100)
        #expect(machine.pausedUntil == nil)
    }

    // MARK: - Working off a backlog

    @Test func exitWhenEmptyChecksTheQueueOnlyWhenNothingIsHeld() {
        var machine = machine(exitWhenEmpty: true)
        running(&machine, claiming: 1...1)
        _ = machine.handle(.finished("1", failed("1", .storageUnavailable)), now: t0, available: 100)
        _ = machine.handle(.settled("1", .keptForRetry(after: .seconds(10))), now: t0, available: 100)
        // The claim came back short and the queue is empty, but this worker holds a retry.
        let short = machine.handle(.claimed([], asked: 4), now: t0, available: 100)
        #expect(!short.contains(.checkEmpty(dueWithin: .seconds(10))))
        let rerun = machine.handle(.tick(t0 + .seconds(10)), now: t0 + .seconds(10), available: 100)
        #expect(rerun.contains(.rerun([job("1", attempt: 2)])))
        // The poll interval has passed too: the queue is asked again, and has nothing.
        #expect(claim(rerun) == 3)
        #expect(!machine.handle(.claimed([], asked: 3), now: t0 + .seconds(10), available: 100).contains(.checkEmpty(dueWithin: .seconds(10))))
        _ = machine.handle(.finished("1", done("1")), now: t0 + .seconds(10), available: 100)
        let settled = machine.handle(.settled("1", .recorded), now: t0 + .seconds(10), available: 100)
        #expect(settled.contains(.checkEmpty(dueWithin: .seconds(10))))
        #expect(
            machine.handle(.emptyChecked(QueueRemainder(due: 0)), now: t0 + .seconds(10), available: 100) == [.note(.queueEmpty(later: 0)), .finish])
    }

    @Test func exitWhenEmptyGoesOnWhenSomethingWaits() {
        var machine = machine(exitWhenEmpty: true)
        _ = machine.handle(.opened, now: t0, available: 100)
        #expect(machine.handle(.claimed([], asked: 4), now: t0, available: 100).contains(.checkEmpty(dueWithin: .seconds(10))))
        #expect(machine.handle(.emptyChecked(QueueRemainder(due: 3)), now: t0, available: 100).allSatisfy { $0 != .finish })
        #expect(machine.handle(.emptyChecked(nil), now: t0, available: 100).allSatisfy { $0 != .finish }, "unknown is not empty")
        #expect(machine.lifecycle == .running)
    }

    @Test func exitWhenEmptyAsksAgainOnlyAfterThePollInterval() {
        var machine = machine(exitWhenEmpty: true)
        _ = machine.handle(.opened, now: t0, available: 100)
        #expect(machine.handle(.claimed([], asked: 4), now: t0, available: 100).contains(.checkEmpty(dueWithin: .seconds(10))))
        // Something is due soon (a retry after its backoff): not empty, and not asked again at once.
        let answered = machine.handle(.emptyChecked(QueueRemainder(due: 1)), now: t0, available: 100)
        #expect(!answered.contains(.checkEmpty(dueWithin: .seconds(10))) && wakeAt(answered) == t0 + .seconds(1))
        let early = machine.handle(.tick(t0 + .milliseconds(500)), now: t0 + .milliseconds(500), available: 100)
        #expect(!early.contains { if case .checkEmpty = $0 { true } else { false } })
        let poll = machine.handle(.tick(t0 + .seconds(1)), now: t0 + .seconds(1), available: 100)
        #expect(claim(poll) == 4)
        #expect(machine.handle(.claimed([], asked: 4), now: t0 + .seconds(1), available: 100).contains(.checkEmpty(dueWithin: .seconds(10))))
    }

    @Test func exitWhenEmptyWaitsForJobsOtherWorkersHoldUntilTheyAreConfirmedOrComeBack() {
        var machine = machine(exitWhenEmpty: true)
        _ = machine.handle(.opened, now: t0, available: 100)
        _ = machine.handle(.claimed([], asked: 4), now: t0, available: 100)
        // Nothing waits, but two jobs run under leases nobody has renewed since: their worker may be dead.
        let first = machine.handle(.emptyChecked(QueueRemainder(due: 0, unconfirmed: 2)), now: t0, available: 100)
        #expect(first.contains(.note(.awaitingOthers(2))) && !first.contains(.finish))
        _ = machine.handle(.tick(t0 + .seconds(1)), now: t0 + .seconds(1), available: 100)
        _ = machine.handle(.claimed([], asked: 4), now: t0 + .seconds(1), available: 100)
        let again = machine.handle(.emptyChecked(QueueRemainder(due: 0, unconfirmed: 2)), now: t0 + .seconds(1), available: 100)
        #expect(!again.contains { if case .note = $0 { true } else { false } }, "said once")
        // Their lease expired and they were taken back: this worker claims and runs them.
        _ = machine.handle(.tick(t0 + .seconds(2)), now: t0 + .seconds(2), available: 100)
        let back = machine.handle(.claimed(jobs(1...2), asked: 4), now: t0 + .seconds(2), available: 98)
        #expect(back.contains(.submit(jobs(1...2))))
        var settling: [Machine.Action] = []
        for id in ["1", "2"] {
            settling += machine.handle(.finished(id, done(id)), now: t0 + .seconds(3), available: 100)
            settling += machine.handle(.settled(id, .recorded), now: t0 + .seconds(3), available: 100)
        }
        #expect(settling.contains(.checkEmpty(dueWithin: .seconds(10))), "holding nothing again, it asks")
        #expect(
            machine.handle(.emptyChecked(QueueRemainder(due: 0)), now: t0 + .seconds(3), available: 100) == [.note(.queueEmpty(later: 0)), .finish])
        #expect(machine.done == 2)
    }

    @Test func exitWhenEmptyLeavesJobsQueuedForLaterAndSaysHowMany() {
        // The horizon is the longest retry backoff: jobs due within it are waited for, later ones are not.
        var machine = machine(retry: .init(maxAttempts: 5, baseDelay: .seconds(1), maxDelay: .seconds(60)), exitWhenEmpty: true)
        _ = machine.handle(.opened, now: t0, available: 100)
        #expect(machine.handle(.claimed([], asked: 4), now: t0, available: 100).contains(.checkEmpty(dueWithin: .seconds(60))))
        #expect(machine.handle(.emptyChecked(QueueRemainder(due: 0, later: 3)), now: t0, available: 100) == [.note(.queueEmpty(later: 3)), .finish])
    }
}
