// The worker state machine's rule for a decoder that crashes or runs out of time: one retry, a second such failure of the job is final.
import Foundation
import ImagePipe
import ImagePipeQueue
import Testing

extension WorkerStateMachineTests {
    // MARK: - Decoder failures

    /// A job as a queue hands it out after `earlier` of its attempts ended with a decoder failure.
    func job(_ id: String, attempt: Int = 1, earlierDecoderFailures earlier: Int) -> ClaimedJob {
        var claimed = job(id, attempt: attempt)
        claimed.job.earlierDecoderFailures = earlier
        return claimed
    }

    @Test func aDecoderFailureIsRetriedOnceAndASecondOneIsFinalWhateverAttemptsAreLeft() {
        let machine = machine(retry: .init(maxAttempts: 10, baseDelay: .seconds(1), maxDelay: .seconds(1)))
        for code in [ImagePipeError.Code.decoderCrashed, .jobTimeout] {
            let result = failed("1", code)
            #expect(result.transient == true, "\(code) is transient")
            if case .retry = machine.decide(result, attempt: 1) {} else { Issue.record("the first \(code) is retried") }
            if case .retry = machine.decide(result, attempt: 4) {} else { Issue.record("the first \(code) after other failures is retried") }
            #expect(machine.decide(result, attempt: 2, earlierDecoderFailures: 1) == .discard, "a second \(code) is final")
            #expect(machine.decide(result, attempt: 9, earlierDecoderFailures: 3) == .discard)
        }
        // Other failures are not counted by it, before or after a decoder failure.
        if case .retry = machine.decide(failed("1", .storageUnavailable), attempt: 2, earlierDecoderFailures: 1) {
        } else {
            Issue.record("a storage failure after a decoder crash is retried as usual")
        }
        #expect(machine.decide(failed("1", .corruptImage), attempt: 1) == .discard)
        #expect(machine.decide(done("1"), attempt: 2, earlierDecoderFailures: 1) == .complete)
        // --max-attempts still bounds the first one.
        let once = self.machine(retry: .init(maxAttempts: 1, baseDelay: .seconds(1), maxDelay: .seconds(1)))
        #expect(once.decide(failed("1", .decoderCrashed), attempt: 1) == .discard)
    }

    @Test func aCrashAfterATimeOutIsTheSecondDecoderFailureOfAJobTheQueueHandsOut() {
        var machine = machine(retry: .init(maxAttempts: 5, baseDelay: .seconds(1), maxDelay: .seconds(1)))
        _ = machine.handle(.opened, now: t0, available: 100)
        // What the queue remembers of the job decides: it timed out on an earlier claim.
        let claimed = job("1", attempt: 2, earlierDecoderFailures: 1)
        _ = machine.handle(.claimed([claimed], asked: 1), now: t0, available: 100)
        let crash = failed("1", .decoderCrashed, "the decoder's helper died of SIGSEGV")
        #expect(machine.handle(.finished("1", crash), now: t0, available: 100).contains(.settle(claimed, .discard, crash)))
        _ = machine.handle(.settled("1", .recorded), now: t0, available: 100)
        #expect(machine.failed == 1 && machine.held.isEmpty)
    }

    @Test func aRetryTheWorkerHoldsRunsAgainWithItsDecoderFailureCounted() {
        var machine = machine(retry: .init(maxAttempts: 5, baseDelay: .seconds(1), maxDelay: .seconds(1)))
        running(&machine, claiming: 1...2)
        let timedOut = failed("1", .jobTimeout, "the image work ran past --job-timeout (30 s)")
        #expect(
            machine.handle(.finished("1", timedOut), now: t0, available: 100).contains {
                if case .settle(job("1"), .retry, timedOut) = $0 { true } else { false }
            }, "settled as it was claimed, nothing counted yet")
        let outage = failed("2", .storageUnavailable)
        _ = machine.handle(.finished("2", outage), now: t0, available: 100)
        // The queue keeps both (a queue directory): they run again from this worker's hands.
        _ = machine.handle(.settled("1", .keptForRetry(after: .seconds(1))), now: t0, available: 100)
        _ = machine.handle(.settled("2", .keptForRetry(after: .seconds(1))), now: t0, available: 100)
        let later = t0 + .seconds(2)
        let rerun = machine.handle(.tick(later), now: later, available: 100)
        let again = job("1", attempt: 2, earlierDecoderFailures: 1)
        #expect(rerun.contains(.rerun([again, job("2", attempt: 2)])), "only the decoder failure is counted: \(rerun)")
        let crash = failed("1", .decoderCrashed)
        #expect(machine.handle(.finished("1", crash), now: later, available: 100).contains(.settle(again, .discard, crash)))
        // A storage failure of the other job, its second attempt, is retried as before.
        #expect(
            machine.handle(.finished("2", outage), now: later, available: 100).contains {
                if case .settle(_, .retry, _) = $0 { true } else { false }
            })
    }

    @Test func aSecondDecoderFailureWhileStoppingIsRecordedNotGivenBack() {
        var machine = machine()
        _ = machine.handle(.opened, now: t0, available: 100)
        let first = job("1", earlierDecoderFailures: 0), second = job("2", attempt: 2, earlierDecoderFailures: 1)
        _ = machine.handle(.claimed([first, second], asked: 2), now: t0, available: 100)
        _ = machine.handle(.gracefulShutdown, now: t0, available: 100)
        // The first may pass (the machine's doing): it goes back for another worker, as any transient failure.
        let crash = failed("1", .decoderCrashed)
        #expect(machine.handle(.finished("1", crash), now: t0, available: 100).contains(.settle(first, .release, crash)))
        // Given back, the second would only crash another worker's helper.
        let again = failed("2", .decoderCrashed)
        #expect(machine.handle(.finished("2", again), now: t0, available: 100).contains(.settle(second, .discard, again)))
    }
}
