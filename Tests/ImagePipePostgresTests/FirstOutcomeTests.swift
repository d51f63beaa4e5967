// The race between a statement and its timeout: the first outcome wins, and an answer ends the timer.
@testable import ImagePipePostgres
import Testing

struct FirstOutcomeTests {
    struct Late: Error {}

    @Test func theFirstOutcomeIsDeliveredAndLaterOnesAreDropped() async throws {
        let outcome = FirstOutcome<Int>()
        let value = try await withCheckedThrowingContinuation { continuation in
            outcome.deliver(to: continuation)
            outcome.settle(.success(1))
            outcome.settle(.failure(Late()))
            outcome.settle(.success(2))
        }
        #expect(value == 1)
    }

    @Test func anOutcomeThatCameBeforeTheContinuationIsStillDelivered() async throws {
        let outcome = FirstOutcome<Int>()
        outcome.settle(.success(7))
        let value = try await withCheckedThrowingContinuation { outcome.deliver(to: $0) }
        #expect(value == 7)
    }

    /// Each statement races a timer of the statement timeout (10 s): an answer must end it at once,
    /// or thousands of statements a second leave thousands of sleeping tasks behind.
    @Test func anAnswerCancelsTheTimerRacingIt() async throws {
        let outcome = FirstOutcome<Int>()
        let timer = Task<Void, Never> { try? await Task.sleep(for: .seconds(600)) }
        outcome.race(timer)
        #expect(!timer.isCancelled)
        outcome.settle(.success(1))
        #expect(timer.isCancelled)
        await timer.value
    }

    @Test func aTimerRacingAnOutcomeThatAlreadyCameIsCancelledAtOnce() async throws {
        let outcome = FirstOutcome<Int>()
        outcome.settle(.failure(Late()))
        let timer = Task<Void, Never> { try? await Task.sleep(for: .seconds(600)) }
        outcome.race(timer)
        #expect(timer.isCancelled)
        await timer.value
    }
}
