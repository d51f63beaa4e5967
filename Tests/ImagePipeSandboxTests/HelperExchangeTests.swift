import Foundation
import ImagePipe
import ImagePipeTestSupport
import Logging
import Testing

#if canImport(Glibc)
import Glibc
#endif

@testable import ImagePipeSandbox

/// The worker's side of one job with a helper, against a helper the test plays on the far end of a
/// real socket pair: what a taken-over helper could answer, and what the worker makes of it. (The
/// real helpers are in ImagePipeHostileHelperTests; this is the logic around them, each case alone.)
@Suite(.serialized) struct HelperExchangeTests {
    /// A process that stands in for the helper's pid (the exchange never signals it), and the
    /// worker's end of a channel whose far end the test holds.
    final class FakeHelper: @unchecked Sendable {
        let stand = Process()
        let helper: ImagePipeSandbox.HelperProcess
        let far: HelperChannel

        init() throws {
            stand.executableURL = URL(fileURLWithPath: "/bin/sleep")
            stand.arguments = ["300"]
            try stand.run()
            let (worker, end) = try HelperChannel.pair()
            helper = ImagePipeSandbox.HelperProcess(pid: stand.processIdentifier, channel: worker)
            far = HelperChannel(taking: end)
        }

        deinit { stand.terminate() }

        /// Reads requests until the job (or the batch), answering setups silently; the job's nonce.
        func receiveJob() throws -> (HelperRequest, UInt64) {
            while true {
                let message = try far.receive(timeout: .seconds(10))
                message.closeDescriptors()
                let request = try HelperRequest(decoding: message.bytes)
                switch request {
                case .setup: continue
                case .compress(let source), .readHeader(let source): return (request, source.nonce)
                case .compressBatch(let sources): return (request, sources[0].nonce)
                default: return (request, 0)
                }
            }
        }
    }

    static let jpeg = Data(base64Encoded: HelperServer.warmUpImages[0].base64)!
    static let variant = try! VariantSpec(parsing: "v=8x8,jpeg,q80")

    /// A compressor whose pool is never started (it starts no helper); the test hands the exchange
    /// its fake helper.
    func compressor(timeout: Duration) -> SandboxedCompressor {
        let settings = HelperSettings(sandbox: true, parent: getpid(), dataLimit: 0, threadsPerImage: 1, compressor: Data())
        let pool = HelperPool(settings: settings, size: 1, logo: nil, environment: [], logger: .init(label: "test"))
        return SandboxedCompressor(pool: pool, jobTimeout: timeout)
    }

    /// Runs one compress exchange with `fake` playing the helper as `play` says, on a thread of its own.
    func exchange(
        _ fake: FakeHelper, timeout: Duration = .seconds(5), memory: WorkingMemory = WorkingMemory(limit: 1 << 30),
        play: @escaping @Sendable (FakeHelper, UInt64) throws -> Void
    ) -> Result<Void, SandboxedCompressor.Failure> {
        let compressor = compressor(timeout: timeout)
        let player = Thread {
            if let (_, nonce) = try? fake.receiveJob() { try? play(fake, nonce) }
        }
        player.start()
        var granted = 0
        defer { if granted > 0 { memory.release(granted) } }
        let source = SourceImage(name: "job.jpg", content: .bytes(Self.jpeg))
        do throws(SandboxedCompressor.Failure) {
            _ = try compressor.exchange(.compress, fake.helper, source, variants: [Self.variant], limits: .default, memory: memory, granted: &granted)
            return .success(())
        } catch {
            return .failure(error)
        }
    }

    /// A result for the job: one variant of `size`, its bytes inside the message.
    static func result(_ bytes: [UInt8], size: PixelSize = PixelSize(width: 8, height: 8)) -> HelperResult {
        var result = HelperResult(
            CompressedImage(sourceFormat: .jpeg, sourceSize: PixelSize(width: 8, height: 8), variants: [], decodeTime: .zero, encodeTime: .zero))
        result.variants = [.init(encoding: VariantEncoding(size: size, quality: 80), byteCount: bytes.count, inline: bytes)]
        return result
    }

    @Test func aReplyThatIsTheJobsOwnAndAJPEGOfItsSizeIsTaken() throws {
        let fake = try FakeHelper()
        let outcome = exchange(fake) { fake, nonce in
            try fake.far.send(HelperReply.compressed(nonce: nonce, Self.result([UInt8](Self.jpeg))).encoded())
        }
        #expect(throws: Never.self) { try outcome.get() }
    }

    @Test func aReplyNamingAnotherJobIsMisbehaviour() throws {
        let fake = try FakeHelper()
        let outcome = exchange(fake) { fake, nonce in
            try fake.far.send(HelperReply.compressed(nonce: nonce &+ 1, Self.result([UInt8](Self.jpeg))).encoded())
        }
        guard case .failure(.ended(.misbehaved, let detail)) = outcome else { Issue.record("\(outcome)"); return }
        #expect(detail == "a reply naming another job")
    }

    @Test func anHTMLPageForAJPEGVariantOrAJPEGOfAnotherSizeIsMisbehaviour() throws {
        let page = Array("<!doctype html><html><body></body></html>".utf8)
        let forged = exchange(try FakeHelper()) { fake, nonce in
            try fake.far.send(HelperReply.compressed(nonce: nonce, Self.result(page)).encoded())
        }
        guard case .failure(.ended(.misbehaved, let detail)) = forged else { Issue.record("\(forged)"); return }
        #expect(detail?.contains("is no JPEG") == true, "\(detail ?? "")")
        let resized = exchange(try FakeHelper()) { fake, nonce in
            try fake.far.send(HelperReply.compressed(nonce: nonce, Self.result([UInt8](Self.jpeg), size: PixelSize(width: 4, height: 4))).encoded())
        }
        guard case .failure(.ended(.misbehaved, let other)) = resized else { Issue.record("\(resized)"); return }
        #expect(other?.contains("states 8x8, not the 4x4 said") == true, "\(other ?? "")")
    }

    @Test func aJobMayAskForMemoryOnlySoOften() throws {
        let outcome = exchange(try FakeHelper()) { fake, nonce in
            for _ in 0...HelperServer.maxNeeds {
                try fake.far.send(HelperReply.need(nonce: nonce, bytes: 64 << 20).encoded())
                let grant = try fake.far.receive(timeout: .seconds(10))
                guard case .grant(nonce, _) = try HelperRequest(decoding: grant.bytes) else { return }
            }
        }
        guard case .failure(.ended(.misbehaved, let detail)) = outcome else { Issue.record("\(outcome)"); return }
        #expect(detail == "more than \(HelperServer.maxNeeds) requests for working memory")
    }

    /// Memory held elsewhere (by other jobs) for longer than the job's wall-clock cap: the job fails
    /// `job_timeout` at the cap (three times the time limit), though its helper's own clock, which
    /// a wait for memory does not count, has time left.
    @Test func aWaitForMemoryCountsAgainstTheJobsWallClock() throws {
        let memory = WorkingMemory(limit: 64 << 20)
        let holder = memory.acquire(64 << 20)
        // Released at last, so that a worker without the cap ends this test (failing it) rather than hang it.
        DispatchQueue.global().asyncAfter(deadline: .now() + 10) { memory.release(holder) }
        let started = ContinuousClock.now
        let outcome = exchange(try FakeHelper(), timeout: .milliseconds(200), memory: memory) { fake, nonce in
            try fake.far.send(HelperReply.need(nonce: nonce, bytes: 32 << 20).encoded())
            _ = try? fake.far.receive(timeout: .seconds(10))
        }
        switch outcome {
        case .failure(.ended(.timeout, let detail)):
            #expect(detail?.contains("working memory") == true, "\(detail ?? "")")
        case .failure(.failed(let error)):
            #expect(error.code == .jobTimeout && error.reason.contains("working memory"), "\(error)")
        default:
            Issue.record("\(outcome)")
        }
        // Not before the cap: three times the 200 ms limit.
        #expect(ContinuousClock.now - started >= .milliseconds(600))
    }
}
