// The group commit's scheduling, with no I/O: who starts a round, who waits, what the next round takes.
@testable import ImagePipe
import ImagePipeTestSupport
import Testing

@Suite struct GroupCommitTests {
    /// The entries of a `runRound` action, or nil for `none`.
    func round(_ action: GroupCommit<Int>.Action) -> [Int]? {
        if case .runRound(let entries) = action { return entries }
        return nil
    }

    @Test func aLonePutStartsARoundAtOnce() {
        var commit = GroupCommit<Int>()
        #expect(round(commit.submitted(1)) == [1], "nobody waits for company")
        let running = commit.isRunningRound
        #expect(running)
        #expect(round(commit.roundEnded()) == nil)
        let idle = !commit.isRunningRound
        #expect(idle, "idle again, so the next put starts its own round")
        #expect(round(commit.submitted(2)) == [2])
    }

    @Test func putsArrivingDuringARoundShareTheNextOneInOrder() {
        var commit = GroupCommit<Int>()
        #expect(round(commit.submitted(1)) == [1])
        for entry in 2...5 { #expect(round(commit.submitted(entry)) == nil, "a round is running: \(entry) waits") }
        let waiting = commit.waitingCount
        #expect(waiting == 4)
        #expect(round(commit.roundEnded()) == [2, 3, 4, 5], "one round for every put that waited")
        let left = commit.waitingCount
        #expect(left == 0)
        #expect(round(commit.submitted(6)) == nil)
        #expect(round(commit.roundEnded()) == [6])
        #expect(round(commit.roundEnded()) == nil)
    }

    @Test func everyEntryIsInExactlyOneRound() {
        // Any interleaving of arrivals and round ends hands each entry to one round, none twice or never.
        var generator = SeededRandom.fromEnvironment()
        let seed = generator.seed
        for _ in 0..<50 {
            var commit = GroupCommit<Int>()
            var seen: [Int] = []
            var running = false
            for entry in 0..<200 {
                if let entries = round(commit.submitted(entry)) {
                    #expect(!running, "never two rounds at once (IMAGEPIPE_TEST_SEED=\(seed))")
                    running = true
                    seen += entries
                }
                if running && Bool.random(using: &generator) {
                    running = false
                    if let entries = round(commit.roundEnded()) {
                        running = true
                        seen += entries
                    }
                }
            }
            while running {
                running = false
                if let entries = round(commit.roundEnded()) {
                    running = true
                    seen += entries
                }
            }
            #expect(seen == Array(0..<200), "IMAGEPIPE_TEST_SEED=\(seed)")
        }
    }
}
