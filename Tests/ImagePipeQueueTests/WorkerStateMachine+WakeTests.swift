// Wake-ups that come while a claim is in flight, and room given back that says nothing of the queue.
import Foundation
import ImagePipe
import ImagePipeQueue
import Testing

extension WorkerStateMachineTests {
    @Test func aWakeWhileAClaimIsInFlightIsNotLostWhenThatClaimComesBackShort() {
        var machine = machine()
        #expect(claim(machine.handle(.opened, now: t0, available: 100)) == 4)
        // New work arrives after the claim looked: the queue's wake comes before the claim's answer.
        #expect(claim(machine.handle(.wake, now: t0, available: 100)) == nil, "one claim at a time")
        let short = machine.handle(.claimed(jobs(1...1), asked: 4), now: t0, available: 99)
        #expect(claim(short) == 3, "the wake said there is more, so the loop looks again at once")
        // Without a wake, a short claim means the queue is empty until news or the poll interval.
        let empty = machine.handle(.claimed([], asked: 3), now: t0, available: 99)
        #expect(claim(empty) == nil && wakeAt(empty) == t0 + .seconds(1))
    }

    @Test func roomGivenBackAfterAShortClaimDoesNotSendTheLoopBackToAnEmptyQueue() {
        var machine = machine()
        #expect(claim(machine.handle(.opened, now: t0, available: 100)) == 4)
        _ = machine.handle(.claimed(jobs(1...2), asked: 4), now: t0, available: 98)
        _ = machine.handle(.finished("1", done("1")), now: t0, available: 98)
        _ = machine.handle(.settled("1", .recorded), now: t0, available: 99)
        #expect(claim(machine.handle(.roomReturned, now: t0, available: 100)) == nil, "the queue said it was empty")
        #expect(claim(machine.handle(.wake, now: t0, available: 100)) == 3, "until it says it has new work")
    }

    @Test func roomGivenBackAfterAFullClaimLetsTheLoopClaimAgain() {
        var machine = machine()
        #expect(claim(machine.handle(.opened, now: t0, available: 4)) == 4)
        _ = machine.handle(.claimed(jobs(1...4), asked: 4), now: t0, available: 0)
        for id in ["1", "2"] {
            _ = machine.handle(.finished(id, done(id)), now: t0, available: 0)
            _ = machine.handle(.settled(id, .recorded), now: t0, available: 0)
        }
        // Claims wait until half the room is free, then take what the pipeline has.
        #expect(claim(machine.handle(.roomReturned, now: t0, available: 2)) == 2)
    }
}

extension WorkerStateMachineTests {
    @Test func aJobClaimedAgainBeforeItsRequeueIsAnsweredKeepsItsNewAttempt() {
        var machine = machine()
        running(&machine, claiming: 1...1)
        // A source that changed while it was read: tried again, with no pause of claiming.
        let settle = machine.handle(.finished("1", failed("1", .sourceChanged)), now: t0, available: 100)
        #expect(settle.contains { if case .settle(_, .retry, _) = $0 { true } else { false } })
        // The queue puts the job back and says so before the settlement's answer reaches the loop.
        #expect(claim(machine.handle(.wake, now: t0, available: 100)) != nil)
        let again = machine.handle(.claimed([job("1", attempt: 2)], asked: 3), now: t0, available: 99)
        #expect(again.contains(.submit([job("1", attempt: 2)])))
        _ = machine.handle(.settled("1", .requeued), now: t0, available: 99)
        #expect(machine.held["1"]?.phase == .running, "the answer about attempt 1 leaves attempt 2 held")
        let completed = machine.handle(.finished("1", done("1")), now: t0, available: 99)
        #expect(completed.contains { if case .settle(_, .complete, _) = $0 { true } else { false } }, "attempt 2's result is recorded")
    }
}

extension WorkerStateMachineTests {
    @Test func aLateAnswerAboutTheAttemptBeforeLeavesTheNewAttemptBeingSettledToBeCounted() {
        var machine = machine()
        running(&machine, claiming: 1...1)
        _ = machine.handle(.finished("1", failed("1", .sourceChanged)), now: t0, available: 100)
        _ = machine.handle(.wake, now: t0, available: 100)
        _ = machine.handle(.claimed([job("1", attempt: 2)], asked: 3), now: t0, available: 99)
        // Attempt 2 ends and is being recorded before the answer about attempt 1 arrives.
        let completed = machine.handle(.finished("1", done("1")), now: t0, available: 99)
        #expect(completed.contains { if case .settle(_, .complete, _) = $0 { true } else { false } })
        _ = machine.handle(.settled("1", .requeued), now: t0, available: 99)
        #expect(machine.held["1"] != nil, "the answer about attempt 1 leaves attempt 2 being recorded")
        _ = machine.handle(.settled("1", .recorded), now: t0, available: 100)
        #expect(machine.held.isEmpty && machine.done == 1, "attempt 2's record is counted")
    }
}
