import Foundation
import ImagePipeTestSupport
import Testing

@testable import ImagePipe

/// The check behind `IMAGEPIPE_CHECK_BLOCKING`: a blocking call that reaches Swift's cooperative
/// pool is caught, the same call handed to ``BlockingIO`` is not.
@Suite(.serialized) struct BlockingIOTests {
    let directory = TemporaryDirectory(prefix: "imagepipe-blocking")

    @Test func aManifestAppendOnTheCooperativePoolIsCaughtAndOneHandedToBlockingIOIsNot() async throws {
        let writer = try ManifestWriter(path: directory.url("manifest.jsonl"))
        let result = JobResult(source: "a.jpg", status: .done, bytes: 10)
        let onPool = await BlockingIO.recordingViolations {
            // An async test runs on the cooperative pool, as a command's run() does.
            writer.append(result)
        }
        #expect(onPool == ["a manifest append"])
        let offPool = await BlockingIO.recordingViolations {
            await BlockingIO.run { writer.append(result) }
            await BlockingIO.run { writer.close() }
        }
        #expect(offPool.isEmpty, "\(offPool)")
        // Caught, not refused: both lines were written.
        let lines = try String(contentsOfFile: directory.url("manifest.jsonl"), encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 2)
    }

    @Test func theCooperativePoolIsToldFromDispatchQueues() async {
        #expect(BlockingIO.isOnCooperativePool, "an async test body runs on the pool")
        #expect(await BlockingIO.run { BlockingIO.isOnCooperativePool } == false, "BlockingIO runs its calls off it")
        let onGlobalQueue = await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: BlockingIO.isOnCooperativePool) }
        }
        #expect(!onGlobalQueue)
    }

    @Test func outsideTheCooperativePoolNothingIsCaught() async {
        let caught = await BlockingIO.recordingViolations {
            await withCheckedContinuation { continuation in
                DispatchQueue.global().async {
                    BlockingIO.mayBlock("an fsync on a Dispatch thread")
                    continuation.resume()
                }
            }
            BlockingIO.mayBlock("an fsync on the pool")
        }
        #expect(caught == ["an fsync on the pool"])
    }
}
