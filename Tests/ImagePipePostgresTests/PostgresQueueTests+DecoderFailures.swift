// The PostgreSQL queue's count of a job's decoder failures: read off its errors at each claim, so a second one ends the job.
import Foundation
import ImagePipe
@testable import ImagePipePostgres
import ImagePipeQueue
import ImagePipeTestKit
import Testing

extension PostgresQueueTests {
    @Test func aClaimCountsTheEarlierAttemptsWhoseDecoderCrashedOrTimedOut() async throws {
        let fixture = try PostgresFixture()
        try await fixture.enqueue(1)
        let queue = try fixture.queue()
        try await queue.open(wake: {}, maxAttempts: 10)
        /// Fails the claimed attempt with `code`, for another claim at once.
        func fail(_ claimed: ClaimedJob, _ code: ImagePipeError.Code) async {
            let result = JobResult(source: claimed.source, status: .failed, error: ImagePipeError(code, "it failed"), attempts: claimed.job.attempt)
            #expect(await queue.retry(claimed, failure: AttemptRecord(result), after: .zero) == .requeued)
        }
        var claimed = try #require(await queue.claim(upTo: 1).first)
        #expect(claimed.job.earlierDecoderFailures == 0)
        await fail(claimed, .storageUnavailable)
        claimed = try #require(await queue.claim(upTo: 1).first)
        #expect(claimed.job.attempt == 2 && claimed.job.earlierDecoderFailures == 0, "a storage failure is no decoder failure")
        await fail(claimed, .jobTimeout)
        claimed = try #require(await queue.claim(upTo: 1).first)
        #expect(claimed.job.attempt == 3 && claimed.job.earlierDecoderFailures == 1)
        await fail(claimed, .decoderCrashed)
        claimed = try #require(await queue.claim(upTo: 1).first)
        #expect(claimed.job.attempt == 4 && claimed.job.earlierDecoderFailures == 2)
        #expect(
            try fixture.sql("SELECT string_agg(e->>'error_code', ',') FROM imagepipe.jobs, jsonb_array_elements(errors) e")
                == "storage_unavailable,job_timeout,decoder_crashed", "counted from the history the job keeps")
        await queue.close()
    }

    @Test func aJobWhoseDecoderCrashesTwiceIsDiscardedAfterTwoAttemptsNotAfterEveryAttemptAllowed() async throws {
        let fixture = try PostgresFixture()
        try await fixture.enqueue(1, prefix: "crashing")
        try await fixture.enqueue(1, prefix: "slow")
        let compressor = ScriptedCompressor(failing: { name in
            name.hasPrefix("crashing")
                ? ImagePipeError(.decoderCrashed, "the decoder's helper died of SIGSEGV")
                : ImagePipeError(.jobTimeout, "the image work ran past --job-timeout (30 s)")
        })
        let running = RunningLoop(
            fixture.loop(try fixture.queue(), compressor: compressor, retry: RetryPolicy(maxAttempts: 5, baseDelay: .milliseconds(50))))
        #expect(try await fixture.eventually { try fixture.states() == ["failed": 2] })
        await running.stop()
        let rows = try fixture.sql(
            """
            SELECT regexp_replace(source, '^.*/', ''), attempt, (SELECT string_agg(e->>'error_code', ',') FROM jsonb_array_elements(errors) e),
                   result->>'error_code'
            FROM imagepipe.jobs ORDER BY 1
            """)
        #expect(rows == "crashing-0.jpg|2|decoder_crashed,decoder_crashed|decoder_crashed\nslow-0.jpg|2|job_timeout,job_timeout|job_timeout")
        #expect(compressor.calls.count == 4, "two attempts each of the five --max-attempts allows")
    }
}
