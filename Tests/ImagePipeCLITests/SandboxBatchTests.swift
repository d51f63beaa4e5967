import Foundation
import ImagePipe
import ImagePipeTestSupport
import Testing

/// Small images go to the sandboxed helpers several in one message, on the real binary: fewer
/// round trips than images (what keeps the sandbox's cost within bounds on small images), and
/// each image still its own job.
@Suite(.offThePool, .serialized) struct SandboxBatchTests {
    let directory = TemporaryDirectory(prefix: "imagepipe-sandbox-batch")

    @Test func smallImagesGoToTheHelpersInBatchesAndADamagedOneFailsAlone() throws {
        let probe = try CommandRunner.run(executable: "/usr/bin/strace", ["-qq", "-o", "/dev/null", "/bin/true"])
        try #require(probe.status == 0, "strace cannot trace here (make test-deps installs it; ptrace must be allowed): \(probe.stderr)")
        for index in 0..<24 {
            CommandRunner.copyFixture("images/formats/small-200x150.jpg", to: directory, as: "src/\(index).jpg")
        }
        // Its header cut short: libjpeg refuses it.
        let damaged = Fixtures.data("images/formats/small-400x300.jpg").prefix(300)
        FileManager.default.createFile(atPath: directory.url("src/damaged.jpg"), contents: damaged)
        let run = try CommandRunner.run(
            executable: "/usr/bin/strace",
            [
                "-f", "-qq", "-e", "trace=recvmsg", "-o", directory.url("trace"), CommandRunner.binary, "batch", directory.url("src"),
                "--dest", directory.url("out"), "--manifest", directory.url("manifest.jsonl"), "--jobs", "1",
                "--variant", "small=100x100,jpeg,q80",
            ])
        #expect(run.status == 1, "one image failed: \(run.stderr)")

        let text = try String(contentsOfFile: directory.url("manifest.jsonl"), encoding: .utf8)
        let results = try text.split(separator: "\n").map { try JSONDecoder().decode(JobResult.self, from: Data($0.utf8)) }
        #expect(results.count == 25)
        #expect(results.filter { $0.status == .done }.count == 24, "\(results.map { "\($0.source) \($0.status)" })")
        let failed = results.filter { $0.status == .failed }
        #expect(failed.map(\.source) == ["damaged.jpg"])
        #expect(failed.first?.errorCode == .corruptImage, "\(failed.first?.error ?? "")")
        for index in 0..<24 {
            #expect(FileManager.default.fileExists(atPath: directory.url("out/\(index)-small.jpg")), "\(index)")
        }

        // What the helpers were handed: a request's first byte is its kind (2: one image, 7: a batch).
        let trace = try String(contentsOfFile: directory.url("trace"), encoding: .utf8)
        let batches = trace.components(separatedBy: "iov_base=\"\\7").count - 1
        let singles = trace.components(separatedBy: "iov_base=\"\\2").count - 1
        #expect(batches >= 1, "small images waiting together go in one message")
        #expect(batches + singles <= 15, "25 images in \(batches) batches and \(singles) alone")
    }

    /// A JPEG of `count` bytes or more: the small fixture with a comment segment (`FF FE`) of filler
    /// after its start marker, so that it sorts before smaller files and still encodes in moments.
    func padded(to count: Int) -> Data {
        let image = Fixtures.data("images/formats/small-200x150.jpg")
        let filler = max(0, count - image.count)
        var data = Data(image.prefix(2))
        var left = filler
        while left > 0 {
            let length = min(left, 60_000)
            data += Data([0xFF, 0xFE, UInt8((length + 2) >> 8), UInt8((length + 2) & 0xFF)]) + Data(repeating: 0x20, count: length)
            left -= length
        }
        return data + image.dropFirst(2)
    }

    @Test func aHelperKilledDuringABatchCostsNoImageOfIt() throws {
        // Quick images around a small file of a whole photo whose AVIF encode takes seconds: a batch
        // starts with the largest original, so it comes after three larger quick ones and before
        // three smaller ones, and whichever the lane takes it with, it is in a batch.
        // First, too large for a batch, a quick image the lane makes alone while every other one is
        // read: so the slow one waits with the small ones behind it, and never reaches an idle lane
        // alone (as it once did in a loaded run, and was killed alone).
        try FileManager.default.createDirectory(atPath: directory.url("src"), withIntermediateDirectories: true)
        FileManager.default.createFile(atPath: directory.url("src/first.jpg"), contents: padded(to: 70_000))
        for index in 0..<3 {
            FileManager.default.createFile(atPath: directory.url("src/large-\(index).jpg"), contents: padded(to: 50_000))
            CommandRunner.copyFixture("images/formats/small-200x150.jpg", to: directory, as: "src/small-\(index).jpg")
        }
        let made = try CommandRunner.run([
            "batch", Fixtures.path(ImageHelpers.longJob.fixture), "--dest", directory.url("made"), "--variant", "photo=1800x1800,jpeg,q6",
        ])
        #expect(made.status == 0, "\(made.stderr)")
        let slow = try Data(contentsOf: URL(fileURLWithPath: directory.url("made/Landscape_1-photo.jpg")))
        try #require(slow.count < 48_000 && slow.count > 20_000, "the slow image must sort between the quick ones: \(slow.count) bytes")
        FileManager.default.createFile(atPath: directory.url("src/slow.jpg"), contents: slow)

        let batch = try WorkerProcess(
            [
                "batch", directory.url("src"), "--dest", directory.url("out"), "--manifest", directory.url("manifest.jsonl"), "--jobs", "1",
                "--variant", ImageHelpers.longJob.variant,
            ], log: directory.url("batch.log"))
        defer { batch.send(SIGKILL) }
        // Only the slow image keeps a helper busy for two seconds of CPU.
        let helper = try #require(ImageHelpers.busy(of: batch.process.processIdentifier, ticks: 200), "\(batch.log)")
        kill(helper, SIGKILL)
        #expect(batch.waitForExit(seconds: 300) == 0, "every image is made: \(batch.log)")

        let text = try String(contentsOfFile: directory.url("manifest.jsonl"), encoding: .utf8)
        let results = try text.split(separator: "\n").map { try JSONDecoder().decode(JobResult.self, from: Data($0.utf8)) }
        #expect(
            results.map(\.source).sorted() == ((0..<3).flatMap { ["large-\($0).jpg", "small-\($0).jpg"] } + ["first.jpg", "slow.jpg"]).sorted(),
            "each image once")
        #expect(results.allSatisfy { $0.status == .done }, "\(results.map { "\($0.source) \($0.status) \($0.error ?? "")" })")
        // Killed alone, the slow image would have failed (`decoder_crashed`): it was in a batch,
        // whose images the helper had not answered for were made again.
        #expect(batch.log.contains("image helper ended"), "\(batch.log)")
    }
}
