// Issue 25 §1 on the real binary: a file's first bytes decide what it is in a batch and a queue directory; lists take CRLF.
import Foundation
import ImagePipe
import ImagePipeQueue
import ImagePipeTestSupport
import Testing

/// One rule for every source: a JPEG named `3f2a9c1e` or `upload.dat` is processed, a text file
/// named `notes.txt` is skipped as `not_an_image`, one named `x.jpg` fails with a reason.
@Suite(.offThePool) struct ImageSignatureCLITests {
    let directory = TemporaryDirectory(prefix: "imagepipe-signature")
    static let variant = ["--variant", "t=16x16,jpeg,q50"]

    /// The four cases of the rule, written into `folder` (delivered by rename into a queue's inbox).
    func writeCases(into folder: String, delivering: Bool = false) {
        let files = [
            "3f2a9c1e": Fixtures.data("images/formats/landscape.jpg"), "upload.dat": Fixtures.data("images/formats/tiny.png"),
            "notes.txt": Data("just some notes\n".utf8), "x.jpg": Data("not a jpeg at all\n".utf8),
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
        #expect(output.status == 1, "x.jpg fails: \(output.stderr)")
        let bySource = try records(try String(contentsOfFile: directory.url("src/manifest.jsonl"), encoding: .utf8))
        #expect(bySource.keys.sorted() == ["3f2a9c1e", "notes.txt", "upload.dat", "x.jpg"])
        #expect(bySource["3f2a9c1e"]?["status"] as? String == "done" && bySource["3f2a9c1e"]?["format"] as? String == "jpeg")
        #expect(bySource["upload.dat"]?["status"] as? String == "done" && bySource["upload.dat"]?["format"] as? String == "png")
        let notes = try #require(bySource["notes.txt"])
        #expect(notes["status"] as? String == "skipped" && notes["skip_code"] as? String == "not_an_image")
        #expect(
            notes["reason"] as? String
                == "not an image: its first bytes match no format imagepipe reads (JPEG, PNG, WebP, TIFF, GIF, HEIC, AVIF)")
        let misnamed = try #require(bySource["x.jpg"])
        #expect(misnamed["status"] as? String == "failed" && misnamed["error_code"] as? String == "unsupported_format")
        #expect((misnamed["error"] as? String)?.isEmpty == false)
        // The stored originals are named by what their bytes are.
        #expect(
            directory.files(under: "out") == ["3f2a9c1e-original.jpg", "3f2a9c1e-t.jpg", "upload-original.png", "upload-t.jpg"])
        #expect(output.stderr.contains("imagepipe: 2 done, 1 failed, 1 skipped (1 not_an_image)"), "\(output.stderr)")
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

    @Test func aQueueDirectoryTakesImagesByTheirBytesAndFilesTheRestUnderFailed() throws {
        let queue = directory.url("queue")
        try FileManager.default.createDirectory(atPath: queue + "/inbox", withIntermediateDirectories: true)
        writeCases(into: queue + "/inbox", delivering: true)
        let worker = try WorkerProcess(
            ["watch", queue, "--dest", directory.url("out"), "--exit-when-empty", "--status-interval", "0"] + Self.variant,
            log: directory.url("worker.log"))
        #expect(worker.waitForExit(seconds: 60) == 0, "\(worker.log)")
        #expect(directory.files(under: "queue/done") == ["3f2a9c1e", "3f2a9c1e.json", "upload.dat", "upload.dat.json"])
        #expect(directory.files(under: "queue/failed") == ["notes.txt", "notes.txt.error.json", "x.jpg", "x.jpg.error.json"])
        let done = try JSONDecoder().decode(JobResult.self, from: Data(contentsOf: URL(fileURLWithPath: queue + "/done/3f2a9c1e.json")))
        #expect(done.status == .done && done.format == .jpeg && done.variants.map(\.key) == ["3f2a9c1e-t.jpg"])
        func failure(_ name: String) throws -> FailureRecord {
            try JSONDecoder().decode(FailureRecord.self, from: Data(contentsOf: URL(fileURLWithPath: queue + "/failed/\(name).error.json")))
        }
        let notes = try failure("notes.txt")
        #expect(notes.skipCode == .notAnImage && notes.errorCode == nil && notes.history.isEmpty)
        #expect(notes.error.hasPrefix("not an image: its first bytes") && notes.result.status == .skipped)
        let misnamed = try failure("x.jpg")
        #expect(misnamed.errorCode == .unsupportedFormat && misnamed.skipCode == nil)
        #expect(TextLog.hasLine(worker.log, "info", "skipped", ["source": "notes.txt", "skip_code": "not_an_image"]), "\(worker.log)")
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
