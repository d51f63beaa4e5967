import Foundation
import ImagePipe
import ImagePipeTestSupport
import Testing

/// Small images go to the sandboxed helpers several in one message, on the real binary: fewer
/// round trips than images (what keeps the sandbox's cost within bounds on small images), and
/// each image still its own job.
@Suite struct SandboxBatchTests {
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
}
