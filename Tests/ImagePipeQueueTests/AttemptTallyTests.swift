// A queue directory's count of a job's decoder failures, on real files.
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import ImagePipe
@testable import ImagePipeQueue
import ImagePipeTestKit
import ImagePipeTestSupport
import Logging
import Testing

@Suite struct AttemptTallyTests {
    let silent = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

    /// The tally file of the original at `path`, read as it is on disk; nil when there is none.
    func tally(_ fixture: QueueFixture, _ path: String) -> AttemptTally? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        let file = fixture.queue.root + "/.attempts/\(info.st_ino).json"
        return FileManager.default.contents(atPath: file).flatMap { try? JSONDecoder().decode(AttemptTally.self, from: $0) }
    }

    func failure(_ fixture: QueueFixture, _ name: String) throws -> FailureRecord {
        try JSONDecoder().decode(FailureRecord.self, from: Data(contentsOf: URL(fileURLWithPath: fixture.queue.failed + "/" + name + ".error.json")))
    }

    // MARK: - Decoder failures

    @Test func aDecoderFailureIsCountedInTheJobsTallyAndItsNextClaimKnowsIt() async throws {
        let fixture = try QueueFixture()
        fixture.deliver("a.jpg")
        let first = try DirectoryQueue(directory: fixture.queue, logger: silent)
        try await first.open(wake: {})
        var claimed = try #require(await first.claim(upTo: 1).first)
        #expect(claimed.job.earlierDecoderFailures == 0)
        func failure(_ code: ImagePipeError.Code) -> AttemptRecord {
            AttemptRecord(JobResult(source: "a.jpg", status: .failed, error: ImagePipeError(code, "it failed")))
        }
        #expect(await first.retry(claimed, failure: failure(.storageUnavailable), after: .zero) == .keepHolding)
        #expect(tally(fixture, first.area.pathOf("a.jpg")) == nil, "a storage failure is not counted there")
        #expect(await first.retry(claimed, failure: failure(.jobTimeout), after: .zero) == .keepHolding)
        #expect(tally(fixture, first.area.pathOf("a.jpg"))?.decoderFailures == 1)
        // The worker stops while the job waits for its retry: back in the inbox, the count with it.
        await first.release([claimed])
        await first.close()
        let second = try DirectoryQueue(directory: fixture.queue, logger: silent)
        try await second.open(wake: {})
        claimed = try #require(await second.claim(upTo: 1).first)
        #expect(claimed.job.earlierDecoderFailures == 1 && claimed.job.attempt == 1)
        #expect(await second.retry(claimed, failure: failure(.decoderCrashed), after: .zero) == .keepHolding)
        #expect(tally(fixture, second.area.pathOf("a.jpg"))?.decoderFailures == 2)
        let discarded = JobResult(source: "a.jpg", status: .failed, error: ImagePipeError(.decoderCrashed, "it failed"))
        #expect(await second.discard(claimed, failure: AttemptRecord(discarded), result: discarded, notice: nil) == .recorded)
        #expect(tally(fixture, fixture.queue.failed + "/a.jpg") == nil, "removed with the job's record")
        await second.close()
    }

    @Test func aJobWhoseDecoderFailsTwiceFailsAfterTwoAttemptsNotAfterEveryAttemptAllowed() async throws {
        let fixture = try QueueFixture()
        let compressor = ScriptedCompressor(failing: { name in
            name.hasPrefix("crashing")
                ? ImagePipeError(.decoderCrashed, "the decoder's helper died of SIGSEGV")
                : ImagePipeError(.jobTimeout, "the image work ran past --job-timeout (30 s)")
        })
        let retries = WorkerLoop.Configuration(
            retry: RetryPolicy(maxAttempts: 5, baseDelay: .milliseconds(20), maxDelay: .milliseconds(100)), statusInterval: .zero)
        try await fixture.withWorker(compressor: compressor, configuration: retries) { _ in
            fixture.deliver("crashing.jpg")
            fixture.deliver("slow.jpg")
            #expect(await eventually { fixture.files("failed").count == 4 }, "\(fixture.files("failed"))")
        }
        for (name, code) in [("crashing.jpg", ImagePipeError.Code.decoderCrashed), ("slow.jpg", .jobTimeout)] {
            let record = try failure(fixture, name)
            #expect(record.errorCode == code && record.attempts == 2 && record.history.map(\.errorCode) == [code, code], "\(name)")
        }
        #expect(compressor.calls.count == 4, "two attempts each of the five --max-attempts allows")
        #expect((try? FileManager.default.contentsOfDirectory(atPath: fixture.queue.root + "/.attempts")) == [])
    }
}
