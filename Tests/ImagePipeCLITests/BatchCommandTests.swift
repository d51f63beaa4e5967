import Foundation
import ImagePipe
import ImagePipeTestSupport
import ImagePipeVips
import ImagePipeVipsTestSupport
import Testing

/// `imagepipe batch` end to end: the real binary on real files.
@Suite(.offThePool) struct BatchCommandTests {
    let directory = TemporaryDirectory()

    func makeSources() {
        CommandRunner.copyFixture("images/exif-orientation/Landscape_6.jpg", to: directory, as: "src/rotated.jpg")
        CommandRunner.copyFixture("images/formats/alpha.png", to: directory, as: "src/Été 2024/logo mark.png")
        CommandRunner.copyFixture("images/formats/landscape-heic.heic", to: directory, as: "src/phone/IMG_0001.HEIC")
        CommandRunner.copyFixture("hostile/truncated.jpg", to: directory, as: "src/broken/cut.jpg")
        directory.write("src/notes.txt", "not an image")
        directory.write("src/.hidden.jpg", "hidden")
    }

    func manifest() throws -> [[String: Any]] {
        let text = try String(contentsOfFile: directory.url("manifest.jsonl"), encoding: .utf8)
        return try text.split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
        }
    }

    @Test func processesAFolderIntoVariantsAManifestAndASummary() throws {
        makeSources()
        let before = directory.files(under: "src").map {
            ($0, SHA256Digest.hash(try! Data(contentsOf: URL(fileURLWithPath: directory.url("src/" + $0)))).hex)
        }

        let output = try CommandRunner.run([
            "batch", directory.url("src"), "--dest", directory.url("out"),
            "--manifest", directory.url("manifest.jsonl"), "--jobs", "2",
        ])

        #expect(output.status == 1, "one source is broken: \(output.stderr)")
        #expect(
            directory.files(under: "out")
                == [
                    "phone/IMG_0001-large.jpg", "phone/IMG_0001-medium.webp", "phone/IMG_0001-thumb.webp",
                    "rotated-large.jpg", "rotated-medium.webp", "rotated-thumb.webp",
                    "Été 2024/logo mark-large.jpg", "Été 2024/logo mark-medium.webp", "Été 2024/logo mark-thumb.webp",
                ].sorted())

        let records = try manifest()
        #expect(records.count == 5)
        let bySource = Dictionary(uniqueKeysWithValues: records.map { ($0["source"] as! String, $0) })
        let rotated = try #require(bySource["rotated.jpg"])
        #expect(rotated["status"] as? String == "done")
        #expect(rotated["width"] as? Int == 1800 && rotated["height"] as? Int == 1200, "stored 1200x1800 with orientation 6: reported as displayed")
        let variants = try #require(rotated["variants"] as? [[String: Any]])
        #expect(variants.map { $0["key"] as! String } == ["rotated-large.jpg", "rotated-medium.webp", "rotated-thumb.webp"])
        #expect(variants[0]["url"] as? String == "file://" + directory.url("out/rotated-large.jpg"))
        for variant in variants {
            let data = try Data(contentsOf: URL(fileURLWithPath: directory.url("out/" + (variant["key"] as! String))))
            #expect(variant["bytes"] as? Int == data.count)
            let info = try VipsProbe.info(data)
            #expect(info.width == variant["width"] as? Int && info.height == variant["height"] as? Int)
        }
        #expect(bySource["phone/IMG_0001.HEIC"]?["format"] as? String == "heic")

        let broken = try #require(bySource["broken/cut.jpg"])
        #expect(broken["status"] as? String == "failed")
        #expect(broken["error_code"] as? String == "corrupt_image")
        #expect((broken["variants"] as? [Any])?.isEmpty == true)

        let notes = try #require(bySource["notes.txt"])
        #expect(notes["status"] as? String == "skipped" && notes["skip_code"] as? String == "not_an_image")
        #expect(
            notes["reason"] as? String == "its first bytes match no format imagepipe reads (JPEG, PNG, WebP, TIFF, GIF, HEIC, AVIF)")

        #expect(output.stderr.contains(#"error failed error="corrupt or truncated image data"#), "\(output.stderr)")
        #expect(TextLog.hasLine(output.stderr, "error", "failed", ["source": "broken/cut.jpg", "error_code": "corrupt_image"]))
        #expect(
            TextLog.hasLine(
                output.stderr, "info", "skipped",
                [
                    "source": "notes.txt", "skip_code": "not_an_image",
                    "reason": "its first bytes match no format imagepipe reads (JPEG, PNG, WebP, TIFF, GIF, HEIC, AVIF)",
                ]))
        #expect(output.stderr.contains("3 done, 1 failed, 1 skipped (1 not_an_image)"))
        #expect(output.stderr.contains(" of it failed) → "), "the broken file's bytes were read: \(output.stderr)")
        #expect(!output.stderr.contains("\r"), "no progress line when stderr is not a terminal")

        let after = directory.files(under: "src").map {
            ($0, SHA256Digest.hash(try! Data(contentsOf: URL(fileURLWithPath: directory.url("src/" + $0)))).hex)
        }
        #expect(after.map(\.0) == before.map(\.0) && after.map(\.1) == before.map(\.1), "originals untouched")
    }

    @Test func customVariantsKeysAndAFileURLDestination() throws {
        CommandRunner.copyFixture("images/formats/landscape.jpg", to: directory, as: "src/a/b.jpg")
        let output = try CommandRunner.run([
            "batch", directory.url("src"), "--dest", "file://" + directory.url("out"),
            "--variant", "photo=600x600,avif,q50", "--variant", "sq=100x100,png,q1,cover",
            "--key", "{hash}/{dir}/{variant}.{ext}", "--manifest", "-",
        ])
        #expect(output.status == 0, "\(output.stderr)")
        let record = try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as! [String: Any]
        let hash = String((record["sha256"] as! String).prefix(16))
        #expect(directory.files(under: "out") == ["\(hash)/a/photo.avif", "\(hash)/a/sq.png"])
        let square = try VipsProbe.info(Data(contentsOf: URL(fileURLWithPath: directory.url("out/\(hash)/a/sq.png"))))
        #expect(square.width == 100 && square.height == 100)
    }

    @Test func openSidedBoxesAndPNGWithoutAQuality() throws {
        CommandRunner.copyFixture("images/formats/landscape.jpg", to: directory, as: "src/wide.jpg")
        let output = try CommandRunner.run([
            "batch", directory.url("src"), "--dest", directory.url("out"),
            "--variant", "w=300x,jpeg,q80", "--variant", "h=x100,png",
        ])
        #expect(output.status == 0, "\(output.stderr)")
        let wide = try VipsProbe.info(Data(contentsOf: URL(fileURLWithPath: directory.url("out/wide-w.jpg"))))
        let high = try VipsProbe.info(Data(contentsOf: URL(fileURLWithPath: directory.url("out/wide-h.png"))))
        #expect(wide.width == 300 && wide.height == 200, "900x600 fitted 300 wide")
        #expect(high.width == 150 && high.height == 100, "900x600 fitted 100 high")

        let cover = try CommandRunner.run(["batch", directory.url("src"), "--dest", directory.url("out2"), "--variant", "c=300x,webp,q80,cover"])
        #expect(cover.status == 2)
        #expect(cover.stderr.contains("'c=300x,webp,q80,cover'") && cover.stderr.contains("needs both a width and a height"), "\(cover.stderr)")
    }

    @Test func allDoneExitsZero() throws {
        CommandRunner.copyFixture("images/formats/tiny.png", to: directory, as: "src/tiny.png")
        let output = try CommandRunner.run(["batch", directory.url("src"), "--dest", directory.url("src/out")])
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stderr.contains("1 done, 0 failed"))
        // The destination sits inside the source tree; a second run must not treat outputs as sources.
        let again = try CommandRunner.run(["batch", directory.url("src"), "--dest", directory.url("src/out"), "--force"])
        #expect(again.status == 0)
        #expect(again.stderr.contains("1 done, 0 failed"), "\(again.stderr)")
    }

    /// A phone export: `IMG_0001.HEIC` beside the `IMG_0001.JPG` the phone made of it, and an edited
    /// copy. The default key gives both the first two `IMG_0001-large.jpg`: the run refuses the
    /// second, naming the key that keeps both, and that key, as the README shows it, does.
    @Test func aPhoneExportNeedsTheKeyTheReadmeShowsAndTheRefusalNamesIt() throws {
        CommandRunner.copyFixture("images/formats/landscape-heic.heic", to: directory, as: "phone/IMG_0001.HEIC")
        CommandRunner.copyFixture("images/formats/landscape.jpg", to: directory, as: "phone/IMG_0001.JPG")
        CommandRunner.copyFixture("images/formats/small-400x300.jpg", to: directory, as: "phone/IMG_E0001.JPG")
        let refused = try CommandRunner.run(["batch", directory.url("phone"), "--dest", directory.url("web"), "--manifest", directory.url("m.jsonl")])
        #expect(refused.status == 1, "\(refused.stderr)")
        #expect(refused.stderr.contains("2 done, 1 failed"), "\(refused.stderr)")
        let failed = try #require(try records(String(contentsOfFile: directory.url("m.jsonl"), encoding: .utf8))["IMG_0001.JPG"])
        #expect(failed["error_code"] as? String == "key_collision")
        let reason = failed["error"] as? String ?? ""
        #expect(
            reason.contains(
                "output key 'IMG_0001-large.jpg' is already produced by 'IMG_0001.HEIC'; to keep both, put the original's extension "
                    + "in the key: --key '{dir}/{stem}-{srcext}-{variant}.{ext}' gives 'IMG_0001-heic-large.jpg' and 'IMG_0001-jpg-large.jpg'"),
            "\(reason)")

        // The README's key for phone exports, taken from the README itself.
        let readme = try String(contentsOfFile: Fixtures.repository + "/README.md", encoding: .utf8)
        let key = "{dir}/{stem}-{srcext}-{variant}.{ext}"
        #expect(readme.contains("--key '\(key)'"), "the README's batch section shows the key for phone exports")
        let kept = try CommandRunner.run(["batch", directory.url("phone"), "--dest", directory.url("web2"), "--key", key])
        #expect(kept.status == 0 && kept.stderr.contains("3 done, 0 failed"), "\(kept.stderr)")
        let stored = Set(directory.files(under: "web2"))
        for name in ["IMG_0001-heic-large.jpg", "IMG_0001-jpg-large.jpg", "IMG_E0001-jpg-thumb.webp"] {
            #expect(stored.contains(name), "\(name) in \(stored.sorted())")
        }
    }

    func records(_ text: String) throws -> [String: [String: Any]] {
        let lines = try text.split(separator: "\n").map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
        return Dictionary(uniqueKeysWithValues: lines.map { ($0["source"] as! String, $0) })
    }

    @Test func filesFoldersAndListsMixed() throws {
        // Paths as a user types them, relative to the working directory.
        CommandRunner.copyFixture("images/formats/tiny.png", to: directory, as: "one/04-Blinds.png")
        CommandRunner.copyFixture("images/formats/grey.jpg", to: directory, as: "two/sub/grey.jpg")
        CommandRunner.copyFixture("images/formats/small-200x150.jpg", to: directory, as: "elsewhere/abs.jpg")
        directory.write("one/readme.md", "not an image")
        let output = try CommandRunner.run(
            [
                "batch", "one/04-Blinds.png", "two", directory.url("elsewhere/abs.jpg"), "./one/readme.md",
                "--dest", "out", "--manifest", "-", "--variant", "t=20x20,png",
            ], in: directory.path)
        #expect(output.status == 0, "\(output.stderr)")
        // A file: its path as given ({dir} one); a folder: relative to it; an absolute file: its name.
        #expect(directory.files(under: "out") == ["abs-t.png", "one/04-Blinds-t.png", "sub/grey-t.png"])
        let bySource = try records(output.stdout)
        #expect(bySource.keys.sorted() == ["abs.jpg", "one/04-Blinds.png", "one/readme.md", "sub/grey.jpg"])
        #expect(bySource["one/readme.md"]?["skip_code"] as? String == "not_an_image", "a file given directly is judged by its bytes too")
        #expect(output.stderr.contains("3 done, 0 failed, 1 skipped (1 not_an_image)"))
    }

    @Test func aListOnStandardInputAndInAFile() throws {
        CommandRunner.copyFixture("images/formats/tiny.png", to: directory, as: "photos/trip/a.png")
        CommandRunner.copyFixture("images/formats/grey.jpg", to: directory, as: "photos/b.jpg")
        let list = "trip/a.png\n\n./b.jpg\ntrip/vanished.jpg\nhttps://example.com/c.jpg\n"
        let piped = try CommandRunner.run(
            [
                "batch", "--from", "-", "--dest", directory.url("out"), "--manifest", "-",
                "--variant", "t=20x20,png",
            ], in: directory.url("photos"), input: Data(list.utf8))
        #expect(piped.status == 1, "one listed file is missing: \(piped.stderr)")
        #expect(directory.files(under: "out") == ["b-t.png", "trip/a-t.png"], "listed paths keep their folders, as a folder run would")
        let bySource = try records(piped.stdout)
        #expect(bySource["trip/vanished.jpg"]?["error_code"] as? String == "unreadable_source")
        #expect(
            TextLog.hasLine(
                piped.stderr, "error", "failed",
                [
                    "source": "trip/vanished.jpg", "error": "cannot read \(directory.url("photos/trip/vanished.jpg")): No such file or directory",
                    "path": directory.url("photos/trip/vanished.jpg"),
                ]),
            "\(piped.stderr)")
        // A web address in the list fails as one, not as a file that does not exist.
        let web = try #require(bySource["https://example.com/c.jpg"], "\(piped.stdout)")
        #expect(web["error_code"] as? String == "unreadable_source")
        #expect((web["error"] as? String)?.hasPrefix("https:// sources are not supported (download it first") == true, "\(web)")

        directory.write("photos/list.txt", list)
        let fromFile = try CommandRunner.run(
            ["batch", "--from", "list.txt", "--dest", directory.url("out2"), "--variant", "t=20x20,png"],
            in: directory.url("photos"))
        #expect(fromFile.status == 1)
        #expect(directory.files(under: "out2") == ["b-t.png", "trip/a-t.png"])
    }

    @Test func aMissingSourceStopsBeforeTheDestinationIsCreated() throws {
        CommandRunner.copyFixture("images/formats/tiny.png", to: directory, as: "src/tiny.png")
        let output = try CommandRunner.run(["batch", "src", "nope", "gone.jpg", "--dest", "outx"], in: directory.path)
        #expect(output.status == 2)
        #expect(output.stderr.contains("source nope does not exist; source gone.jpg does not exist"), "\(output.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory.url("outx")), "nothing is created")

        let list = try CommandRunner.run(["batch", "--from", "no-such-list.txt", "--dest", "outx"], in: directory.path)
        #expect(list.status == 2)
        #expect(list.stderr.contains("cannot read the list no-such-list.txt"), "\(list.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory.url("outx")))
    }

    @Test func skippedEntriesAreNamedAndAnEmptySourceWarns() throws {
        directory.write("src/notes", "no extension")
        directory.write("src/sub/x.txt", "text")
        try FileManager.default.createSymbolicLink(atPath: directory.url("src/loop"), withDestinationPath: directory.url("src"))
        try FileManager.default.createSymbolicLink(atPath: directory.url("src/gone.jpg"), withDestinationPath: directory.url("missing.jpg"))
        let output = try CommandRunner.run(["batch", directory.url("src"), "--dest", directory.url("out"), "--manifest", "-"])
        #expect(output.status == 0, "nothing failed: \(output.stderr)")
        #expect(output.stderr.contains("warning no images found"))
        #expect(TextLog.hasLine(output.stderr, "info", "skipped", ["source": "loop", "reason": "symbolic link to a directory, not followed"]))
        #expect(
            TextLog.hasLine(output.stderr, "info", "skipped", ["source": "gone.jpg", "reason": "dangling symbolic link: No such file or directory"]))
        #expect(
            TextLog.hasLine(
                output.stderr, "info", "skipped",
                [
                    "source": "notes",
                    "reason": "its first bytes match no format imagepipe reads (JPEG, PNG, WebP, TIFF, GIF, HEIC, AVIF)",
                ]))
        #expect(output.stderr.contains("0 done, 0 failed, 4 skipped (1 dangling_link, 2 not_an_image, 1 symlinked_directory)"))
        let bySource = try records(output.stdout)
        #expect(
            bySource.mapValues { $0["skip_code"] as? String } == [
                "loop": "symlinked_directory", "gone.jpg": "dangling_link", "notes": "not_an_image", "sub/x.txt": "not_an_image",
            ])
        #expect(bySource.values.allSatisfy { $0["status"] as? String == "skipped" && $0["error"] == nil })
    }

    @Test func anAllFailedBatchCountsTheBytesItRead() throws {
        CommandRunner.copyFixture("hostile/garbage.png", to: directory, as: "src/garbage.png")
        let output = try CommandRunner.run(["batch", directory.url("src"), "--dest", directory.url("out")])
        #expect(output.status == 1)
        #expect(
            TextLog.hasLine(
                output.stderr, "error", "failed",
                ["source": "garbage.png", "error": "cannot read image header: PNG unsigned integer out of range"]), "\(output.stderr)")
        #expect(output.stderr.contains("2.0 kB in (2.0 kB of it failed) → 0 B out"), "\(output.stderr)")
    }

    @Test func aFailureCarriesOnlyItsOwnLibvipsReason() throws {
        // Reading a HEIC leaves "source: bad seek to ..." in libvips' shared error buffer, though it succeeds.
        CommandRunner.copyFixture("images/formats/landscape-heic.heic", to: directory, as: "src/a.heic")
        CommandRunner.copyFixture("hostile/truncated.jpg", to: directory, as: "src/z.jpg")
        let output = try CommandRunner.run(["batch", directory.url("src"), "--dest", directory.url("out"), "--jobs", "1"])
        #expect(output.status == 1)
        #expect(
            TextLog.hasLine(
                output.stderr, "error", "failed",
                ["source": "z.jpg", "error": "corrupt or truncated image data: VipsJpeg: Premature end of input file"]),
            "\(output.stderr)")
    }

    @Test func manifestLinesOnATerminalNeverShareTheProgressLine() throws {
        // script(1) runs imagepipe with standard output and error on one pseudo-terminal, as in a shell.
        let script = "/usr/bin/script"
        try #require(FileManager.default.isExecutableFile(atPath: script), "util-linux script is needed for a terminal")
        for (index, fixture) in ["tiny.png", "grey.jpg", "small-200x150.jpg", "landscape-png.png"].enumerated() {
            CommandRunner.copyFixture("images/formats/" + fixture, to: directory, as: "src/\(index)-" + fixture)
        }
        let command = [
            CommandRunner.binary, "batch", directory.url("src"), "--dest", directory.url("out"), "--manifest", "-",
            "--jobs", "1", "--variant", "t=20x20,png",
        ].map { "'\($0)'" }.joined(separator: " ")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: script)
        process.arguments = ["-qefc", command, "/dev/null"]
        process.standardInput = FileHandle.nullDevice
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let terminal = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(terminal)")

        #expect(terminal.contains("[1/4] 0 failed, "), "the progress line is drawn: \(terminal.debugDescription)")
        let starts = terminal.ranges(of: "{\"attempts\"")
        #expect(starts.count == 4)
        for start in starts {
            // A manifest line starts a terminal line: after a newline, or after the progress line was erased.
            let before = terminal[..<start.lowerBound]
            #expect(
                before.isEmpty || before.hasSuffix("\n") || before.hasSuffix("\r\u{1B}[2K"),
                "a manifest line glued to the progress line: \(terminal.debugDescription)")
        }
    }

    @Test(arguments: [
        ["batch"],
        ["batch", "--dest", "/tmp/x"],
        ["batch", "/nonexistent-imagepipe-source", "--dest", "/tmp/x"],
        ["batch", ".", "--dest", "ftp://example.com/x"],
        ["batch", ".", "--dest", "/tmp/x", "--variant", "bad"],
        ["batch", ".", "--dest", "/tmp/x", "--key", "/{stem}-{variant}.{ext}"],
        ["batch", ".", "--dest", "/tmp/x", "--key", "../{stem}-{variant}.{ext}"],
        ["batch", ".", "--dest", "/tmp/x", "--jobs", "0"],
        ["batch", ".", "--dest", "/tmp/x", "--no-such-option"],
        ["frobnicate"],
    ])
    func usageAndConfigurationErrorsExitTwo(_ arguments: [String]) throws {
        let output = try CommandRunner.run(arguments, in: directory.path)
        #expect(output.status == 2, "\(arguments): \(output.stderr)")
        #expect(!output.stderr.isEmpty)
    }

    @Test func everyCommandHasHelp() throws {
        for arguments in [["--help"], ["batch", "--help"], ["watch", "--help"]] {
            let output = try CommandRunner.run(arguments)
            #expect(output.status == 0)
            #expect(output.stdout.contains("USAGE"))
        }
        // config passes what follows it to the command it checks, but not a request for help.
        for arguments in [["config", "--help"], ["config", "watch", "--help"], ["config", "batch", "-h"]] {
            let output = try CommandRunner.run(arguments)
            #expect(output.status == 0, "\(arguments): \(output.stderr)")
            #expect(output.stdout.contains("USAGE: imagepipe config"), "\(arguments): \(output.stdout)")
            #expect(!output.stdout.contains("[watch]"), "\(arguments) printed a configuration")
        }
    }

    @Test(arguments: ["batch", "watch"])
    func helpShowsTheWebPresetAndAnExampleVariant(_ command: String) throws {
        let help = try CommandRunner.run([command, "--help"]).stdout
        for spec in [
            "large=2048x2048,jpeg,q82", "medium=1024x1024,webp,q78", "thumb=320x320,webp,q70,cover", "photo=1600x,jpeg,q80",
            "large=2048x2048,jpeg,auto:67.5", "photo=1600x,jpeg,auto",
        ] {
            #expect(help.contains(spec), "\(command) --help lacks \(spec): \(help)")
        }
        // The FORMAT list is the format table's, in its order, as the README's is checked against it.
        let flat = help.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        let formats = "FORMAT: " + OutputFormat.allCases.map(\.rawValue).joined(separator: ", ") + "."
        #expect(flat.contains(formats), "\(command) --help lists not \(formats)")
    }
}
