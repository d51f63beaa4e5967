// Issues 25 §1 and 52 §4 on the real binary: a file's first bytes decide what it is in a batch and a queue directory; lists take CRLF.
import Foundation
import ImagePipe
import ImagePipeQueue
import ImagePipeTestSupport
import Testing

/// One rule for every source: a JPEG named `3f2a9c1e` or `upload.dat` is processed, and a text file
/// or an empty one is skipped as `not_an_image` whatever it is called (`notes.txt`, `x.jpg`,
/// `empty.png`); each with the same fate in a batch and in both queues (PostgreSQL's in
/// PostgresWatchCommandTests). A damaged image (`broken.jpg`, a JPEG's first bytes) fails.
@Suite(.offThePool) struct ImageSignatureCLITests {
    let directory = TemporaryDirectory(prefix: "imagepipe-signature")
    static let variant = ["--variant", "t=16x16,jpeg,q50"]
    /// The files that are no image, whatever their names say.
    static let noImages = ["empty.png", "notes.txt", "x.jpg"]
    static let reason = "its first bytes match no format imagepipe reads (JPEG, PNG, WebP, TIFF, GIF, HEIC, AVIF)"

    /// The cases of the rule, written into `folder` (delivered by rename into a queue's inbox).
    func writeCases(into folder: String, delivering: Bool = false) {
        let files = [
            "3f2a9c1e": Fixtures.data("images/formats/landscape.jpg"), "upload.dat": Fixtures.data("images/formats/tiny.png"),
            "notes.txt": Data("just some notes\n".utf8), "x.jpg": Data("not a jpeg at all\n".utf8), "empty.png": Data(),
            "broken.jpg": Fixtures.data("hostile/truncated.jpg"),
        ]
        for (name, data) in files {
            if delivering {
                InboxDelivery.deliver(data, to: folder, as: name)
            } else {
                directory.write(folder + "/" + name, data)
            }
        }
    }

    func records(_ text: String) throws -> [String: [String: Any]] {
        let lines = try text.split(separator: "\n").map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
        return Dictionary(uniqueKeysWithValues: lines.map { ($0["source"] as! String, $0) })
    }

    @Test func aBatchTakesImagesByTheirBytesWhateverTheirNames() throws {
        writeCases(into: "src")
        directory.write("src/.hidden", Fixtures.data("images/formats/tiny.png"))
        // The manifest is written inside the source folder: it is never read back as a source.
        let output = try CommandRunner.run(
            ["batch", "src", "--dest", "out", "--manifest", "src/manifest.jsonl", "--with-original"] + Self.variant, in: directory.path)
        #expect(output.status == 1, "broken.jpg fails: \(output.stderr)")
        let bySource = try records(try String(contentsOfFile: directory.url("src/manifest.jsonl"), encoding: .utf8))
        #expect(bySource.keys.sorted() == ["3f2a9c1e", "broken.jpg", "empty.png", "notes.txt", "upload.dat", "x.jpg"])
        #expect(bySource["3f2a9c1e"]?["status"] as? String == "done" && bySource["3f2a9c1e"]?["format"] as? String == "jpeg")
        #expect(bySource["upload.dat"]?["status"] as? String == "done" && bySource["upload.dat"]?["format"] as? String == "png")
        // A name that promises an image changes nothing: the same bytes, the same fate.
        for name in Self.noImages {
            let record = try #require(bySource[name])
            #expect(record["status"] as? String == "skipped" && record["skip_code"] as? String == "not_an_image", "\(name): \(record)")
            #expect(record["error_code"] == nil, "\(name)")
        }
        // The reason follows the code where both are shown: it does not say "not an image" again.
        #expect(bySource["notes.txt"]?["reason"] as? String == Self.reason && bySource["x.jpg"]?["reason"] as? String == Self.reason)
        #expect(bySource["empty.png"]?["reason"] as? String == "an empty file (0 bytes)")
        #expect(bySource["broken.jpg"]?["status"] as? String == "failed" && bySource["broken.jpg"]?["error_code"] as? String == "corrupt_image")
        // The stored originals are named by what their bytes are.
        #expect(
            directory.files(under: "out") == ["3f2a9c1e-original.jpg", "3f2a9c1e-t.jpg", "upload-original.png", "upload-t.jpg"])
        #expect(output.stderr.contains("imagepipe: 2 done, 1 failed, 3 skipped (3 not_an_image)"), "\(output.stderr)")
        #expect(!output.stderr.contains("not an image"), "\(output.stderr)")
        #expect(!output.stderr.contains("no images found"))
    }

    @Test func aFolderOfNoImagesSaysSoAndCostsNoDecode() throws {
        directory.write("docs/a.txt", "a\n")
        directory.write("docs/b", "b\n")
        let output = try CommandRunner.run(["batch", "docs", "--dest", "out", "--manifest", "-"] + Self.variant, in: directory.path)
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stderr.contains("warning no images found"), "\(output.stderr)")
        #expect(output.stderr.contains("0 done, 0 failed, 2 skipped (2 not_an_image)"), "\(output.stderr)")
    }

    @Test func aQueueDirectoryTakesImagesByTheirBytesAndSkipsTheRestIntoDone() throws {
        let queue = directory.url("queue")
        try FileManager.default.createDirectory(atPath: queue + "/inbox", withIntermediateDirectories: true)
        writeCases(into: queue + "/inbox", delivering: true)
        let worker = try WorkerProcess(
            ["watch", queue, "--dest", directory.url("out"), "--exit-when-empty", "--status-interval", "0"] + Self.variant,
            log: directory.url("worker.log"))
        #expect(worker.waitForExit(seconds: 60) == 0, "\(worker.log)")
        // A delivery that is no image is finished, nothing failed: it is in done/ with its record,
        // whatever its name, as its PostgreSQL job ends `done`. The damaged image fails.
        #expect(
            directory.files(under: "queue/done") == [
                "3f2a9c1e", "3f2a9c1e.json", "empty.png", "empty.png.json", "notes.txt", "notes.txt.json", "upload.dat",
                "upload.dat.json", "x.jpg", "x.jpg.json",
            ])
        #expect(directory.files(under: "queue/failed") == ["broken.jpg", "broken.jpg.error.json"])
        func record(_ name: String) throws -> JobResult {
            try JSONDecoder().decode(JobResult.self, from: Data(contentsOf: URL(fileURLWithPath: queue + "/done/\(name).json")))
        }
        let done = try record("3f2a9c1e")
        #expect(done.status == .done && done.format == .jpeg && done.variants.map(\.key) == ["3f2a9c1e-t.jpg"])
        for name in Self.noImages {
            let skipped = try record(name)
            #expect(skipped.status == .skipped && skipped.skipCode == .notAnImage && skipped.errorCode == nil, "\(name)")
            #expect(skipped.variants.isEmpty, "\(name)")
            // One word in the log: the outcome, with its code.
            #expect(TextLog.hasLine(worker.log, "info", "skipped", ["source": name, "skip_code": "not_an_image"]), "\(worker.log)")
        }
        #expect(try record("x.jpg").reason == Self.reason && record("empty.png").reason == "an empty file (0 bytes)")
        let broken = try JSONDecoder().decode(
            FailureRecord.self, from: Data(contentsOf: URL(fileURLWithPath: queue + "/failed/broken.jpg.error.json")))
        #expect(broken.errorCode == .corruptImage && broken.skipCode == nil)
        #expect(TextLog.hasLine(worker.log, "error", "failed", ["source": "broken.jpg", "error_code": "corrupt_image"]), "\(worker.log)")
        #expect(!worker.log.contains("not an image"), "\(worker.log)")
        // queue status and list say what the folders say, in the same words.
        let status = try CommandRunner.run(["queue", "status", queue])
        #expect(status.stdout.contains("done\t5\n") && status.stdout.contains("failed\t1\n"), "\(status.stdout)")
        #expect(status.stdout.split(separator: "\n").contains { $0.hasPrefix("broken.jpg\tfailed\t") }, "\(status.stdout)")
        let listed = try CommandRunner.run(["queue", "list", queue, "--state", "done"])
        #expect(listed.stdout.split(separator: "\n").count { $0.contains("\tdone\t") } == 5, "\(listed.stdout)")
    }

    @Test func aListWithCRLFLineEndsNamesEachPathOnce() throws {
        CommandRunner.copyFixture("images/formats/tiny.png", to: directory, as: "a.png")
        CommandRunner.copyFixture("images/formats/grey.jpg", to: directory, as: "b c.jpg")
        directory.write("list.txt", "a.png\r\nb c.jpg\r\n\r\n")
        let output = try CommandRunner.run(
            ["batch", "--from", "list.txt", "--dest", "out", "--manifest", "-"] + Self.variant, in: directory.path)
        #expect(output.status == 0, "\(output.stderr)")
        #expect(try records(output.stdout).keys.sorted() == ["a.png", "b c.jpg"])
        #expect(directory.files(under: "out") == ["a-t.jpg", "b c-t.jpg"])

        // A line that is no path stops the batch before anything is made, naming the line.
        directory.write("bad.txt", Data("a.png\r\n".utf8) + Data([0x62, 0x00, 0x0A]))
        let bad = try CommandRunner.run(["batch", "--from", "bad.txt", "--dest", "out2"], in: directory.path)
        #expect(bad.status == 2 && bad.stderr.contains("the list bad.txt, line 2: holds a NUL byte"), "\(bad.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory.url("out2")))
    }
}
