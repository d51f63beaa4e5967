// The manifest as the commands meet it: shared by two batches, written by a re-run, and mistaken for another file.
import Foundation
import ImagePipe
import ImagePipeTestSupport
import Testing

/// `batch --manifest`, then `srcset` and `report` on what it wrote, with the real binary.
@Suite(.offThePool) struct ManifestCommandTests {
    let directory = TemporaryDirectory(prefix: "imagepipe-manifest")

    /// `count` different photos (each cropped differently, so each is its own original) in `folder`.
    func photos(_ count: Int, in folder: String) {
        let photo = Fixtures.data("images/formats/landscape.jpg")
        for index in 0..<count {
            // A comment segment after SOI makes other bytes, the same picture.
            var bytes = photo.prefix(2)
            let text = Array("photo \(index)".utf8)
            bytes += Data([0xFF, 0xFE, 0x00, UInt8(text.count + 2)] + text)
            bytes += photo.dropFirst(2)
            directory.write("\(folder)/photo-\(index).jpg", bytes)
        }
    }

    @Test func aSecondBatchOnAManifestInUseIsRefusedAndTheFirstOneStaysWhole() throws {
        photos(14, in: "a")
        photos(14, in: "b")
        let manifest = directory.url("shared.jsonl")
        let first = try WorkerProcess(
            ["batch", directory.url("a"), "--dest", directory.url("out-a"), "--manifest", manifest, "--jobs", "1"],
            log: directory.url("first.log"))
        // Held still once it has written a line, so the second run surely meets it at work.
        #expect(eventually(seconds: 60) { ((try? Data(contentsOf: URL(fileURLWithPath: manifest)))?.count ?? 0) > 0 }, "\(first.log)")
        first.send(SIGSTOP)
        let second = try CommandRunner.run(["batch", directory.url("b"), "--dest", directory.url("out-b"), "--manifest", manifest])
        first.send(SIGCONT)
        #expect(second.status == 2, "\(second.stderr)")
        #expect(second.stderr.contains("the manifest \(manifest) is being written by another imagepipe process"), "\(second.stderr)")
        #expect(first.waitForExit(seconds: 120) == 0, "\(first.log)")
        let lines = try String(contentsOfFile: manifest, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 14)
        let records = try ManifestReader.read(manifest)
        #expect(Set(records.map(\.source)) == Set((0..<14).map { "photo-\($0).jpg" }) && records.allSatisfy { $0.status == .done })
        // Once the first has ended, the manifest is free again.
        let again = try CommandRunner.run(["batch", directory.url("b"), "--dest", directory.url("out-b"), "--manifest", manifest])
        #expect(again.status == 0, "\(again.stderr)")
    }

    @Test func runsThatShareDevNullAsTheirManifestAllRun() throws {
        // /dev/null is no file to lock or empty: every run may write to it at once.
        photos(14, in: "a")
        photos(1, in: "b")
        let first = try WorkerProcess(
            ["batch", directory.url("a"), "--dest", directory.url("out-a"), "--manifest", "/dev/null", "--jobs", "1"],
            log: directory.url("first.log"))
        #expect(eventually(seconds: 60) { first.log.contains("done") || directory.files(under: "out-a").count > 0 }, "\(first.log)")
        first.send(SIGSTOP)
        let second = try CommandRunner.run(["batch", directory.url("b"), "--dest", directory.url("out-b"), "--manifest", "/dev/null"])
        first.send(SIGCONT)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(first.waitForExit(seconds: 120) == 0, "\(first.log)")
    }

    @Test func aReRunsManifestShowsTheSameImagesInSrcsetAndReport() throws {
        photos(2, in: "in")
        CommandRunner.copyFixture("images/exif-orientation/Landscape_6.jpg", to: directory, as: "in/turned.jpg")
        for manifest in ["first.jsonl", "second.jsonl"] {
            let run = try CommandRunner.run(["batch", directory.url("in"), "--dest", directory.url("out"), "--manifest", directory.url(manifest)])
            #expect(run.status == 0, "\(run.stderr)")
        }
        let second = try ManifestReader.read(directory.url("second.jsonl"))
        #expect(second.count == 3 && second.allSatisfy { $0.skipCode == .upToDate }, "the second run made nothing")
        let first = try ManifestReader.read(directory.url("first.jsonl"))
        for record in second {
            let made = try #require(first.first { $0.source == record.source })
            #expect(record.width == made.width && record.height == made.height && record.format == made.format)
            #expect(record.placeholder == made.placeholder && record.placeholder != nil)
            #expect(record.variants.map(\.key) == made.variants.map(\.key) && record.variants.map(\.bytes) == made.variants.map(\.bytes))
        }
        // The re-run's lines carry the placeholder's picture too, made from the ThumbHash the outputs recorded.
        for line in try String(contentsOfFile: directory.url("second.jsonl"), encoding: .utf8).split(separator: "\n") {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let made = try #require(first.first { $0.source == object["source"] as? String })
            #expect((object["placeholder"] as? [String: String])?["data_uri"] == made.placeholder?.dataURI && made.placeholder?.dataURI != nil)
        }
        let firstMarkup = try CommandRunner.run(["srcset", directory.url("first.jsonl")])
        let secondMarkup = try CommandRunner.run(["srcset", directory.url("second.jsonl")])
        #expect(secondMarkup.status == 0, "\(secondMarkup.stderr)")
        // Records come in the order images finished: the pictures are compared as a set.
        let pictures = { (text: String) in Set(text.components(separatedBy: "<!-- ").dropFirst()) }
        #expect(pictures(secondMarkup.stdout).count == 3)
        #expect(pictures(secondMarkup.stdout) == pictures(firstMarkup.stdout), "the same pictures from either run")

        let report = try CommandRunner.run(["report", directory.url("second.jsonl"), "-o", directory.url("report.html")])
        #expect(report.status == 0, "\(report.stderr)")
        let html = try String(contentsOfFile: directory.url("report.html"), encoding: .utf8)
        #expect(
            html.contains("<h2>Images</h2>") && html.contains(#"<b class="name" title="turned.jpg">turned.jpg</b>1800x1200 jpeg"#),
            "\(html.suffix(2000))")
        #expect(html.contains("<td>large</td><td>3</td>"))
    }

    @Test func srcsetAndReportRefuseWhatIsNotAManifestNamingTheLine() throws {
        photos(1, in: "in")
        #expect(
            try CommandRunner.run(["batch", directory.url("in"), "--dest", directory.url("out"), "--manifest", directory.url("m.jsonl")]).status == 0)
        let manifest = try String(contentsOfFile: directory.url("m.jsonl"), encoding: .utf8)
        directory.write("some.log", "2026-01-01T00:00:00Z info started\n")
        directory.write("mixed.jsonl", manifest + "\n{\"level\":\"info\",\"message\":\"done\"}\n")
        for command in [["srcset"], ["report", "-o", directory.url("r.html")]] {
            let log = try CommandRunner.run([command[0], directory.url("some.log")] + command.dropFirst())
            #expect(log.status == 2 && log.stderr.contains("\(directory.url("some.log")), line 1: not an imagepipe manifest record"), "\(log.stderr)")
            let mixed = try CommandRunner.run([command[0], directory.url("mixed.jsonl")] + command.dropFirst())
            #expect(
                mixed.status == 2 && mixed.stderr.contains("mixed.jsonl, line 3: not an imagepipe manifest record (no \"source\")"), "\(mixed.stderr)"
            )
        }
        #expect(!FileManager.default.fileExists(atPath: directory.url("r.html")), "no page written")

        // A manifest with records but nothing to show says so, instead of printing nothing.
        directory.write("dummy/notes.txt", "not an image")
        #expect(
            try CommandRunner.run(["batch", directory.url("dummy"), "--dest", directory.url("out2"), "--manifest", directory.url("none.jsonl")])
                .status == 0)
        let none = try CommandRunner.run(["srcset", directory.url("none.jsonl")])
        #expect(none.status == 2 && none.stderr.contains("has no image to show: of its 1 records, 1 skipped (not_an_image)"), "\(none.stderr)")
        // What is not a regular file is read too (it was refused as "permission denied").
        for command in ["srcset", "report"] {
            let empty = try CommandRunner.run([command, "/dev/null"])
            #expect(empty.status == 2 && empty.stderr.contains("/dev/null has no records"), "\(empty.stderr)")
        }
    }
}
