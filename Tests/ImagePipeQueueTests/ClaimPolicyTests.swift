@testable import ImagePipeQueue
import ImagePipe
import Testing

/// How much a worker may claim, from what it holds, with no I/O.
@Suite struct ClaimPolicyTests {
    /// A pipeline with room for 4 jobs: up to 12 held in all.
    let policy = ClaimPolicy(pipelineRoom: 4, firstPause: .seconds(5), longestPause: .seconds(60))
    let now = ContinuousClock.now

    @Test func jobsThatHoldPipelineRoomLimitClaimsToTheRoomLeft() {
        #expect(policy.room(held: 0, working: 0, at: now) == 4)
        // Two working (running, or waiting for a retry) and six handed off: two more, not six.
        #expect(policy.room(held: 8, working: 2, at: now) == 2)
        #expect(policy.room(held: 3, working: 1, at: now) == 3)
    }

    @Test func claimsComeInBatchesOfHalfTheRoom() {
        // Nothing while more than half the room is working; every free place once at most half is.
        #expect(policy.room(held: 3, working: 3, at: now) == 0)
        #expect(policy.room(held: 4, working: 4, at: now) == 0)
        #expect(policy.room(held: 2, working: 2, at: now) == 2)
    }

    @Test func handedOffJobsCountOnlyAgainstTheHoldLimit() {
        #expect(policy.holdLimit == 12)
        #expect(policy.room(held: 10, working: 0, at: now) == 2)
        #expect(policy.room(held: 12, working: 0, at: now) == 0)
    }

    @Test func aFullStoragePausesEveryClaim() {
        var paused = policy
        #expect(
            paused.note(JobResult(source: "a.jpg", status: .failed, error: ImagePipeError(.storageFull, "No space left")), at: now)
                == .paused(.seconds(5)))
        #expect(paused.room(held: 0, working: 0, at: now + .seconds(4)) == 0)
        #expect(paused.room(held: 0, working: 0, at: now + .seconds(5)) == 4)
    }
}
