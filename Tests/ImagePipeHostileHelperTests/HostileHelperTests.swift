import Foundation
import ImagePipe
import ImagePipeTestSupport
import Testing

/// Hostile code run inside real image helpers, as an exploit of a decoder would run it (a libvips
/// module whose loader libvips asks about every source, in the helper, inside its sandbox: see
/// module/hostile-module.c), with the worker run as root, as containers, `make demo` and many
/// servers run it. Each attempt must be refused or contained, and cost at most its own job.
@Suite(.offThePool) struct HostileHelperTests {
    /// Sources on tmpfs: a file system that cannot be frozen or shut down, should an attempt get through.
    let sources = TemporaryDirectory(prefix: "imagepipe-hostile-sources", under: "/dev/shm")
    let directory = TemporaryDirectory(prefix: "imagepipe-hostile")

    /// These tests are about a worker run as root; `make test` runs as root (or installs with sudo,
    /// and CI runs it as root). Run as another user, they would test a worker without privilege.
    func requireRoot() throws {
        try #require(getuid() == 0, "the hostile helper tests run the worker as root: run them as root, as CI does")
    }

    /// Writes each (name, image) into the sources and runs a batch of them with `variants`; returns
    /// the run, its records by source, and its log (standard error).
    func batch(
        _ images: [(String, Data)], variants: [String] = ["t=200x,jpeg,q70"], arguments: [String] = ["--jobs", "1"]
    ) throws -> (status: Int32, records: [String: JobResult], log: String) {
        for (name, data) in images { sources.write(name, data) }
        let run = try CommandRunner.run(
            ["batch", sources.path, "--dest", directory.url("out"), "--manifest", directory.url("manifest.jsonl")]
                + variants.flatMap { ["--variant", $0] } + arguments,
            environment: try HostileModule.environment())
        let records = (try? ManifestReader.read(directory.url("manifest.jsonl"))) ?? []
        return (run.status, Dictionary(records.map { ($0.source, $0) }, uniquingKeysWith: { first, _ in first }), run.stderr)
    }

    @Test func aRootWorkersZygoteAndHelpersHoldNoPrivilegeBeforeAnyModuleRuns() throws {
        try requireRoot()
        let run = try batch([("identity.jpg", HostileModule.image("identity"))])
        #expect(run.status == 0, "\(run.log)")
        let lines = HostileModule.lines("identity", in: run.log)
        // Once as the zygote loads libvips (the module's own start-up code, before any sandbox), and
        // once from inside the helper that had the job.
        let loading = lines.filter { $0.text.contains("where=module-load") }
        let working = lines.filter { $0.text.contains("where=helper") }
        #expect(!loading.isEmpty && working.count == 1, "\(run.log)")
        for line in lines {
            let fields = HostileModule.fields(line.text)
            for id in ["uid", "euid", "suid", "gid"] {
                #expect(fields[id] != nil && fields[id] != "0", "\(id) in \(line.text)")
            }
            for set in ["effective", "permitted", "bounding"] {
                #expect(fields[set] == "0", "\(set) in \(line.text)")
            }
        }
        #expect(run.records["identity.jpg"]?.status == .done)
        // What the worker writes keeps the worker's owner: the helpers' user owns nothing of it.
        var status = stat()
        #expect(stat(directory.url("out/identity-t.jpg"), &status) == 0 && status.st_uid == getuid(), "owner \(status.st_uid)")
    }

    /// A user for the helpers that is root, or no user at all, stops the command before any work.
    @Test func helperUserMustBeAnUnprivilegedUserThatExists() throws {
        for (user, message) in [("root", "other than root"), ("0:0", "other than root"), ("no-such-user-here", "no user on this system")] {
            let run = try CommandRunner.run(["batch", sources.path, "--dest", directory.url("out"), "--helper-user", user])
            #expect(run.status == 2, "\(user): \(run.stderr)")
            #expect(run.stderr.contains(message), "\(user): \(run.stderr)")
        }
        let named = try CommandRunner.run(["version", "--verbose", "--helper-user", "65534:65534"])
        #expect(named.stdout.contains("image helpers run as: nobody (65534:65534)"), "\(named.stdout)")
    }

    @Test func fileSystemIoctlsClocksSchedulingAndPathsAreRefusedInsideAHelper() throws {
        try requireRoot()
        let run = try batch(["freeze", "clock", "sched", "paths"].map { ("\($0).jpg", HostileModule.image($0)) })
        // The hostile code fails at everything it tries, and the images themselves are made.
        #expect(run.status == 0, "\(run.log)")
        #expect(run.records.values.allSatisfy { $0.status == .done }, "\(run.records)")

        let freezes = HostileModule.lines("freeze", in: run.log).map { HostileModule.fields($0.text) }
        #expect(freezes.contains { $0["type"] == "file" }, "the source's own descriptor was tried: \(freezes)")
        for attempt in freezes {
            // FIFREEZE and EXT4_IOC_SHUTDOWN would take the file system holding the source (and the
            // queue) away; FS_IOC_GETFLAGS needs no privilege: only the filter refuses it.
            #expect(attempt["fifreeze"] == "EPERM" && attempt["shutdown"] == "EPERM" && attempt["getflags"] == "EPERM", "\(attempt)")
        }
        let expected: [String: [String]] = [
            // The clock is asked to change by values the kernel refuses once past the sandbox (EINVAL).
            "clock": ["adjtimex", "clock_settime"],
            // SCHED_FIFO with priority 0 and mlock2 with a bad flag: EINVAL once past; a lower nice
            // value EACCES past the filter; real-time I/O priority: EPERM from the filter.
            "sched": ["fifo", "nice", "ioprio", "mlock"],
            // Calls that answer for any path, which Landlock does not decide.
            "paths": ["stat", "stat_empty_path", "access", "readlink", "o_path"],
        ]
        for (kind, attempts) in expected {
            let lines = HostileModule.lines(kind, in: run.log)
            #expect(lines.count == 1, "\(kind): \(run.log)")
            let fields = HostileModule.fields(lines.first?.text ?? "")
            for attempt in attempts { #expect(fields[attempt] == "EPERM", "\(kind) \(attempt): \(fields)") }
        }
        // Each refusal is reported in the worker's log, by the call's number.
        #expect(run.log.contains("the sandbox refused system call"), "\(run.log)")
    }

    @Test func aForgedOutputFailsItsOwnJobAndIsNeverStored() throws {
        try requireRoot()
        let run = try batch([
            ("forge.jpg", HostileModule.image("forge")), ("forge-size.jpg", HostileModule.image("forge-size")),
            ("plain.jpg", Fixtures.data("images/formats/landscape.jpg")),
        ])
        #expect(run.status == 1, "two images failed: \(run.log)")
        let forged = try #require(run.records["forge.jpg"])
        #expect(forged.status == .failed && forged.errorCode == .decoderCrashed, "\(forged)")
        #expect(forged.error?.contains("is no JPEG") == true, "\(forged.error ?? "")")
        let resized = try #require(run.records["forge-size.jpg"])
        #expect(resized.status == .failed && resized.errorCode == .decoderCrashed, "\(resized)")
        #expect(resized.error?.contains("states 1x1") == true, "\(resized.error ?? "")")
        // Nothing of theirs was stored; the other image's output is the JPEG it says it is.
        #expect(!FileManager.default.fileExists(atPath: directory.url("out/forge-t.jpg")))
        #expect(!FileManager.default.fileExists(atPath: directory.url("out/forge-size-t.jpg")))
        #expect(run.records["plain.jpg"]?.status == .done)
        let plain = try [UInt8](Data(contentsOf: URL(fileURLWithPath: directory.url("out/plain-t.jpg"))))
        #expect(OutputHeader.size(of: plain, as: .jpeg)?.width == 200)
    }

    @Test func aStrayReplyFailsItsOwnJobAloneAlsoInABatchOfSmallImages() throws {
        try requireRoot()
        var images = [("stray.jpg", HostileModule.image("stray")), ("after.jpg", Fixtures.data("images/formats/tall.jpg"))]
        // Small ones go to a helper several in one message: the stray reply comes while their batch is worked.
        images.append(("small-stray.jpg", HostileModule.image("stray", fixture: "images/formats/small-200x150.jpg")))
        for index in 0..<12 { images.append(("small-\(index).jpg", Fixtures.data("images/formats/small-200x150.jpg"))) }
        let run = try batch(images, variants: ["t=100x,jpeg,q70"])
        #expect(run.status == 1, "\(run.log)")
        for name in ["stray.jpg", "small-stray.jpg"] {
            let record = try #require(run.records[name])
            #expect(record.status == .failed && record.errorCode == .decoderCrashed, "\(record)")
            #expect(record.error?.contains("naming another job") == true, "\(record.error ?? "")")
        }
        #expect(HostileModule.lines("stray", in: run.log).contains { $0.text == "sendmsg=ok" }, "the stray reply was sent: \(run.log)")
        // Every other image is made, each from its own source.
        let others = run.records.values.filter { !$0.source.contains("stray") }
        #expect(others.count == 13 && others.allSatisfy { $0.status == .done }, "\(others)")
        for record in others {
            let stem = (record.source as NSString).deletingPathExtension
            let output = try [UInt8](Data(contentsOf: URL(fileURLWithPath: directory.url("out/\(stem)-t.jpg"))))
            let expected = try #require(record.variants.first?.encoding.size)
            #expect(expected.width == 100 && (record.source == "after.jpg" || expected.height == 75), "\(record.source): \(expected)")
            #expect(OutputHeader.size(of: output, as: .jpeg) == expected, "\(record.source)")
        }
    }

    @Test func aHelperNeverMeetsASecondUploadAndABatchsHelperOnlyItsBatch() throws {
        try requireRoot()
        // Uploads too large for a batch: a helper of their own each.
        var images = (1...6).map { ("large-\($0).jpg", HostileModule.image("observe", "large-\($0)")) }
        // Small ones: a batch's helper sees its batch, and nothing after it.
        images += (1...20).map { ("small-\($0).jpg", HostileModule.image("observe", "small-\($0)", fixture: "images/formats/small-200x150.jpg")) }
        // Resized, so that libvips decodes each (one at its own size would take the direct JPEG path).
        let run = try batch(images, variants: ["t=100x,jpeg,q70"], arguments: ["--jobs", "2"])
        #expect(run.status == 0, "\(run.log)")
        // Each line lists every source its helper saw so far: the last line per helper is all of them.
        var seen: [String: Set<String>] = [:]
        for line in HostileModule.lines("observe", in: run.log) {
            let names = HostileModule.fields(line.text)["seen"]?.split(separator: ",").map(String.init) ?? []
            seen[line.pid, default: []].formUnion(names)
        }
        #expect(Set(seen.values.flatMap { $0 }) == Set(images.map { ($0.0 as NSString).deletingPathExtension }), "\(seen)")
        for (pid, names) in seen {
            if names.contains(where: { $0.hasPrefix("large") }) {
                #expect(names.count == 1, "helper \(pid) met more than its upload: \(names.sorted())")
            }
            // A lane's small jobs share a helper while more keep waiting, up to 256
            // (SandboxedCompressor.sourcesPerHelper); never one that served a large upload.
            #expect(names.count <= 256, "helper \(pid): \(names.sorted())")
        }
        // No source was met by two helpers: none failed, so none was made again.
        let total = seen.values.reduce(0) { $0 + $1.count }
        #expect(total == images.count, "\(seen)")
    }

    @Test func onlyImagepipesOwnModulesAreLoadedFromVIPSHOME() throws {
        try requireRoot()
        try FileManager.default.createDirectory(atPath: directory.url("queue/inbox"), withIntermediateDirectories: true)
        let worker = try WorkerProcess(
            ["watch", directory.url("queue"), "--dest", directory.url("out"), "--jobs", "1", "--status-interval", "0"],
            log: directory.url("worker.log"), environment: try HostileModule.environment())
        defer { worker.send(SIGKILL) }
        #expect(worker.waitForLog("watching"), "\(worker.log)")
        let zygote = try #require(ImageHelpers.zygote(of: worker.process.processIdentifier), "\(worker.log)")
        let libraries = ImageHelpers.libraries(zygote)
        let home = try HostileModule.home.get()
        // The two modules imagepipe uses, by name, from the VIPSHOME it was given; nothing else there.
        #expect(libraries.contains { $0.hasPrefix(home) && $0.hasSuffix("/vips-jxl.so") }, "\(libraries.sorted())")
        // (Debian's HEIC module, linked there: the map shows the file the link names.)
        #expect(libraries.contains { $0.hasSuffix("/vips-heif.so") }, "\(libraries.sorted())")
        #expect(!libraries.contains { $0.contains("vips-extra") }, "\(libraries.sorted())")
        worker.send(SIGTERM)
        #expect(worker.waitForExit(seconds: 60) == 0, "\(worker.log)")
        #expect(!worker.log.contains("hostile extra"), "\(worker.log)")
        #expect(worker.log.contains("hostile identity: where=module-load"), "the hostile module was loaded: \(worker.log)")
    }
}
