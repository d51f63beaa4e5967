import Foundation
#if canImport(Glibc)
import Glibc
#endif
import ImagePipe
import ImagePipeTestSupport
import ImagePipeVipsTestSupport
import Testing

/// Re-runs, collisions, dry runs and destinations that cannot take the work, with the real binary on real files.
@Suite(.offThePool) struct SafeRunCommandTests {
    let directory = TemporaryDirectory(prefix: "imagepipe-safe")

    static let photos = [
        "landscape.jpg", "landscape-png.png", "landscape-webp.webp", "small-400x300.jpg", "tall.jpg",
        "panorama.jpg", "cmyk.jpg", "grey.jpg", "progressive.jpg", "display-p3.jpg",
    ]

    func makeSources(_ names: [String] = photos) {
        for name in names { CommandRunner.copyFixture("images/formats/" + name, to: directory, as: "src/" + name) }
    }

    func records(_ file: String = "manifest.jsonl") throws -> [JobResult] {
        let text = try String(contentsOfFile: directory.url(file), encoding: .utf8)
        return try text.split(separator: "\n").map { try JSONDecoder().decode(JobResult.self, from: Data($0.utf8)) }
    }

    func inodes(under relative: String) -> [String: UInt] {
        Dictionary(
            uniqueKeysWithValues: directory.files(under: relative).map { name in
                var info = stat()
                stat(directory.url(relative + "/" + name), &info)
                return (name, UInt(info.st_ino))
            })
    }

    @Test func aReRunSkipsEveryFinishedImageAndRewritesNothing() throws {
        makeSources(Array(Self.photos.prefix(4)))
        let first = try CommandRunner.run(["batch", directory.url("src"), "--dest", directory.url("out")])
        #expect(first.status == 0, "\(first.stderr)")
        let before = inodes(under: "out")
        #expect(before.count == 12)

        let again = try CommandRunner.run([
            "batch", directory.url("src"), "--dest", directory.url("out"),
            "--manifest", directory.url("manifest.jsonl"),
        ])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stderr.contains("0 done, 0 failed, 4 skipped"), "\(again.stderr)")
        #expect(inodes(under: "out") == before, "no output was rewritten")
        let skipped = try records()
        #expect(skipped.count == 4 && skipped.allSatisfy { $0.status == .skipped && $0.skipCode == .upToDate })
        let landscape = try #require(skipped.first { $0.source == "landscape.jpg" })
        #expect(landscape.variants.map(\.key) == ["landscape-large.jpg", "landscape-medium.webp", "landscape-thumb.webp"])
        #expect(landscape.variants.allSatisfy { $0.width > 0 && $0.height > 0 && $0.bytes > 0 && $0.url.hasPrefix("file://") })

        let forced = try CommandRunner.run(["batch", directory.url("src"), "--dest", directory.url("out"), "--force"])
        #expect(forced.stderr.contains("4 done, 0 failed"), "\(forced.stderr)")
        #expect(inodes(under: "out").allSatisfy { before[$0.key] != $0.value }, "--force rewrote every output")
    }

    /// Quick start 1's nightly run, on a local folder: a photo edited in place (same name, other
    /// bytes) is published by the next plain run, which exits 0, logs each output it replaces and
    /// records it; the other photos are left as they were.
    @Test func anEditedPhotoIsPublishedByTheNextPlainRun() throws {
        makeSources(["landscape.jpg", "tall.jpg"])
        let batch = ["batch", directory.url("src"), "--dest", directory.url("out"), "--manifest", directory.url("manifest.jsonl")]
        #expect(try CommandRunner.run(batch).status == 0)
        let tall = inodes(under: "out").filter { $0.key.hasPrefix("tall-") }

        CommandRunner.copyFixture("images/formats/panorama.jpg", to: directory, as: "src/landscape.jpg")
        let again = try CommandRunner.run(batch)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stderr.contains("1 done, 0 failed, 1 skipped"), "\(again.stderr)")
        #expect(again.stderr.contains("replacing an output of a changed original"), "\(again.stderr)")
        #expect(again.stderr.contains("key=landscape-large.jpg"), "\(again.stderr)")
        #expect(!again.stderr.contains("immutable"), "a local folder serves no Cache-Control: nothing to warn of")
        let large = try VipsProbe.info(try Data(contentsOf: URL(fileURLWithPath: directory.url("out/landscape-large.jpg"))))
        #expect(large.width > 3 * large.height, "the edited picture, a panorama, where a 3:2 photo was: \(large.width)x\(large.height)")
        let record = try #require(try records().first { $0.source == "landscape.jpg" })
        #expect(record.status == .done && record.sha256 == SHA256Digest.hash(Fixtures.data("images/formats/panorama.jpg")).hex)
        #expect(record.variants.count == 3 && record.variants.allSatisfy { $0.replaced == .earlierVersion })
        #expect(inodes(under: "out").filter { $0.key.hasPrefix("tall-") } == tall, "the unchanged photo's outputs are untouched")
    }

    @Test func aChangedOriginalIsRefusedUntilUpdateOrOverwriteReplacesIt() throws {
        CommandRunner.copyFixture("images/formats/landscape.jpg", to: directory, as: "one/photo.jpg")
        CommandRunner.copyFixture("images/formats/tall.jpg", to: directory, as: "two/photo.jpg")
        #expect(try CommandRunner.run(["batch", directory.url("one"), "--dest", directory.url("out")]).status == 0)
        let large = directory.url("out/photo-large.jpg")
        let blinds = try Data(contentsOf: URL(fileURLWithPath: large))

        // The same name in another folder is another photo, not an edit: a plain run refuses it.
        let refused = try CommandRunner.run([
            "batch", directory.url("two"), "--dest", directory.url("out"),
            "--manifest", directory.url("manifest.jsonl"),
        ])
        #expect(refused.status == 1)
        let record = try #require(try records().first)
        #expect(record.errorCode == .keyCollision)
        #expect(
            record.error?.hasPrefix(
                "output key 'photo-large.jpg' already holds an image made from another 'photo.jpg', read from \(directory.url("one/photo.jpg"))")
                == true, "\(record.error ?? "")")
        #expect(record.error?.contains("--update") == true)
        #expect(try Data(contentsOf: URL(fileURLWithPath: large)) == blinds, "the first image's output is untouched")

        // Another name for the same keys is another original: --update does not replace it.
        let renamed = try CommandRunner.run([
            "batch", directory.url("two"), "--dest", directory.url("out"), "--update",
            "--key", "photo-{variant}.{ext}", "--manifest", directory.url("manifest.jsonl"),
        ])
        #expect(renamed.status == 0, "\(renamed.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: large)) != blinds, "the same name, changed: --update replaced it")
        #expect(renamed.stderr.contains("replacing an output of a changed original"))
        #expect(renamed.stderr.contains("key=photo-large.jpg"))

        CommandRunner.copyFixture("images/formats/landscape.jpg", to: directory, as: "three/other.jpg")
        let other = try CommandRunner.run([
            "batch", directory.url("three"), "--dest", directory.url("out"), "--update",
            "--key", "photo-{variant}.{ext}", "--manifest", directory.url("manifest.jsonl"),
        ])
        #expect(other.status == 1)
        #expect(try records().first?.error?.contains("already holds an image made from 'photo.jpg'") == true)
        let replaced = try CommandRunner.run([
            "batch", directory.url("three"), "--dest", directory.url("out"), "--overwrite",
            "--key", "photo-{variant}.{ext}",
        ])
        #expect(replaced.status == 0, "\(replaced.stderr)")
        #expect(replaced.stderr.contains("replacing an output made from another original"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: large)) == blinds, "landscape.jpg's pixels again, now from other.jpg")
    }

    @Test func aDryRunListsTheKeysAndTouchesNothing() throws {
        makeSources(["landscape.jpg", "tall.jpg"])
        let output = try CommandRunner.run([
            "batch", directory.url("src"), "--dest", directory.url("out"), "--dry-run",
            "--key", "{hash}/{variant}.{ext}",
        ])
        #expect(output.status == 0, "\(output.stderr)")
        let lines = output.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 2)
        let hash = SHA256Digest.hash(try Data(contentsOf: URL(fileURLWithPath: directory.url("src/landscape.jpg")))).hex.prefix(16)
        #expect(lines[0] == "write  landscape.jpg (900x600 jpeg) → \(hash)/large.jpg, \(hash)/medium.webp, \(hash)/thumb.webp", "\(lines)")
        #expect(!FileManager.default.fileExists(atPath: directory.url("out")), "not even the destination is created")

        #expect(try CommandRunner.run(["batch", directory.url("src"), "--dest", directory.url("out")]).status == 0)
        let after = try CommandRunner.run(["batch", directory.url("src"), "--dest", directory.url("out"), "--dry-run"])
        #expect(after.stdout.split(separator: "\n").allSatisfy { $0.hasPrefix("skip   ") }, "\(after.stdout)")
    }

    @Test func aBatchInterruptedByCtrlCResumesWhereItStopped() throws {
        let names = (0..<12).map { "photo\($0).jpg" }
        for (index, name) in names.enumerated() {
            CommandRunner.copyFixture("images/formats/" + Self.photos[index % Self.photos.count], to: directory, as: "src/" + name)
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CommandRunner.binary)
        process.arguments = [
            "batch", directory.url("src"), "--dest", directory.url("out"), "--jobs", "1",
            "--manifest", directory.url("first.jsonl"),
        ]
        process.standardError = FileHandle.nullDevice
        try process.run()
        #expect(eventually { ((try? records("first.jsonl")) ?? []).count >= 2 })
        kill(process.processIdentifier, SIGINT)
        process.waitUntilExit()
        #expect(process.terminationStatus == 130)
        let finished = Set(try records("first.jsonl").filter { $0.status == .done }.map(\.source))
        #expect(finished.count < names.count, "interrupted before the end")

        let resumed = try CommandRunner.run([
            "batch", directory.url("src"), "--dest", directory.url("out"),
            "--manifest", directory.url("second.jsonl"),
        ])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        let second = try records("second.jsonl")
        #expect(second.count == names.count)
        #expect(Set(second.filter { $0.status == .skipped }.map(\.source)).isSuperset(of: finished))
        #expect(second.allSatisfy { $0.status != .failed })
        #expect(directory.files(under: "out").count == 3 * names.count)
        #expect(directory.files(under: "out").allSatisfy { !$0.contains(".imagepipe-") }, "no temporary file left")
    }

    @Test func ctrlCWhileAListIsReadStopsAtOnceAndCreatesNothing() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CommandRunner.binary)
        process.arguments = ["batch", "--from", "-", "--dest", directory.url("out")]
        let input = Pipe()
        process.standardInput = input
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Once SIGINT has a handler (the batch's interruption, installed before anything is read), it
        // no longer kills the process the default way.
        #expect(eventually(seconds: 10) { Self.catchesSIGINT(process.processIdentifier) })
        kill(process.processIdentifier, SIGINT)
        let exited = eventually(seconds: 10) { !process.isRunning }
        #expect(exited, "a list still being read does not hold Ctrl-C back")
        if !exited { process.terminate() }
        process.waitUntilExit()
        #expect(process.terminationStatus == 130)
        #expect(!FileManager.default.fileExists(atPath: directory.url("out")))
    }

    @Test func aDryRunThatPredictsFailuresExitsOne() throws {
        CommandRunner.copyFixture("images/formats/landscape.jpg", to: directory, as: "one/photo.jpg")
        CommandRunner.copyFixture("images/formats/tall.jpg", to: directory, as: "two/photo.jpg")
        #expect(try CommandRunner.run(["batch", directory.url("one"), "--dest", directory.url("out")]).status == 0)
        let dry = try CommandRunner.run(["batch", directory.url("two"), "--dest", directory.url("out"), "--dry-run", "--overwrite"])
        // Another photo under the same name is the one imagepipe takes for an edited original (what
        // --update replaces), and the line says so.
        #expect(
            dry.status == 0
                && dry.stdout.hasPrefix("write  photo.jpg (150x2400 jpeg) → photo-large.jpg (replaces the output of its earlier version)"),
            "\(dry.stdout)")
        #expect(!dry.stderr.contains("replacing"), "a dry run replaces nothing, so it says nothing of replacing")
        let failing = try CommandRunner.run(["batch", directory.url("two"), "--dest", directory.url("out"), "--dry-run"])
        #expect(failing.status == 1)
        #expect(
            failing.stdout.hasPrefix("fail   photo.jpg: output key 'photo-large.jpg' already holds an image made from another 'photo.jpg'"),
            "\(failing.stdout)")
    }

    // MARK: - Destinations that cannot take the work

    /// A tmpfs mounted for the test (root only), unmounted when done.
    final class Mount {
        let path: String
        init?(at path: String, options: String) {
            try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            let mount = Process()
            mount.executableURL = URL(fileURLWithPath: "/bin/mount")
            mount.arguments = ["-t", "tmpfs", "-o", options, "tmpfs", path]
            guard (try? mount.run()) != nil else { return nil }
            mount.waitUntilExit()
            guard mount.terminationStatus == 0 else { return nil }
            self.path = path
        }
        deinit {
            let umount = Process()
            umount.executableURL = URL(fileURLWithPath: "/bin/umount")
            umount.arguments = ["-l", path]
            try? umount.run()
            umount.waitUntilExit()
        }
    }

    @Test(.requiresRoot("mount a tmpfs")) func aReadOnlyDestinationStopsBatchAndWatchWithExitStatus2() throws {
        makeSources(["landscape.jpg"])
        let mount = try #require(Mount(at: directory.url("ro"), options: "ro,size=1m"))
        let batch = try CommandRunner.run(["batch", directory.url("src"), "--dest", mount.path])
        #expect(batch.status == 2)
        #expect(batch.stderr.contains("destination \(mount.path) is not writable: Read-only file system"), "\(batch.stderr)")
        #expect(!batch.stderr.contains("done,"), "stopped before the first image")

        let watch = try CommandRunner.run(["watch", directory.url("queue"), "--dest", mount.path])
        #expect(watch.status == 2)
        #expect(watch.stderr.contains("Read-only file system"), "\(watch.stderr)")
    }

    @Test(.requiresRoot("mount a tmpfs")) func aFullDestinationStopsTheBatchAndLeavesNoPartialOutputs() throws {
        let names = (0..<10).map { "photo\($0).jpg" }
        for (index, name) in names.enumerated() {
            CommandRunner.copyFixture("images/formats/" + Self.photos[index % Self.photos.count], to: directory, as: "src/" + name)
        }
        let mount = try #require(Mount(at: directory.url("tiny"), options: "size=400k"))
        let output = try CommandRunner.run([
            "batch", directory.url("src"), "--dest", mount.path, "--jobs", "1",
            "--manifest", directory.url("manifest.jsonl"),
        ])
        #expect(output.status == 1)
        let results = try records()
        #expect(results.count == names.count)
        let full = results.filter { $0.errorCode == .storageFull }
        #expect(!full.isEmpty, "\(output.stderr)")
        #expect(results.contains { $0.error?.hasPrefix("not processed: ") == true }, "the rest failed at once")
        #expect(full.allSatisfy { $0.transient == true })
        // Only images that are done have files; a failed one removed what it had stored.
        let done = Set(results.filter { $0.status == .done }.flatMap { $0.variants.map(\.key) })
        let files = Set(try FileManager.default.subpathsOfDirectory(atPath: mount.path))
        #expect(files == done, "outputs of failed images were removed: \(files.subtracting(done))")
    }

    /// Whether the process has a handler for SIGINT (`SigCgt` in /proc/PID/status).
    static func catchesSIGINT(_ pid: Int32) -> Bool {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("SigCgt:") }),
            let mask = UInt64(line.dropFirst("SigCgt:".count).trimmingCharacters(in: .whitespaces), radix: 16)
        else { return false }
        return mask & (1 << (UInt64(SIGINT) - 1)) != 0
    }
}
