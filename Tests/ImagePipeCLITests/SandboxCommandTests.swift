import Foundation
import ImagePipe
import ImagePipeTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Image work in sandboxed helper processes, on the real binary: the sandbox as the kernel reports
/// it, what a helper holds, and a helper that crashes, is killed or hangs mid-job.
@Suite(.offThePool, .serialized) struct SandboxCommandTests {
    let directory = TemporaryDirectory(prefix: "imagepipe-sandbox")

    /// Secrets a worker may be given, by name, each with a value no helper may hold.
    static let secrets = [
        "AWS_ACCESS_KEY_ID": "AKIDSANDBOXTEST", "AWS_SECRET_ACCESS_KEY": "sandbox-secret-access-key",
        "SUPABASE_SERVICE_KEY": "sandbox-supabase-key", "PGPASSWORD": "sandbox-pg-password",
        "IMAGEPIPE_NOTIFY_SECRET": "sandbox-notify-secret", "DATABASE_URL": "postgres://u:sandbox-db@localhost/x",
    ]

    @Test func theSelfTestFindsEveryProbeRefused() throws {
        let output = try CommandRunner.run(["image-helper", "--self-test"])
        #expect(output.status == 0, "\(output.stdout)\(output.stderr)")
        let lines = output.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first?.hasPrefix("sandbox: applied") == true, "\(output.stdout)")
        let probes = [
            "socket", "connect", "open-passwd", "create-file", "exec", "signal-parent", "unshare", "capabilities", "clock-adjust", "clock-set",
            "sched-fifo", "nice-negative", "ioprio-realtime", "mlock", "fifreeze", "ioctl-unlisted", "stat", "stat-empty-path-flag", "access",
            "readlink", "open-path", "unlisted-call", "unknown-call",
        ]
        for probe in probes {
            let line = lines.first { $0.hasPrefix(probe + ": ") }
            #expect(line?.hasPrefix("\(probe): refused") == true, "\(probe): \(line ?? "missing")")
        }
        // A call newer than the filter answers as on an older kernel; every other refusal is EPERM.
        #expect(lines.contains { $0.hasPrefix("unknown-call: refused (Function not implemented)") }, "\(output.stdout)")
        #expect(lines.contains { $0.hasPrefix("fifreeze: refused (Operation not permitted)") }, "\(output.stdout)")
        #expect(!output.stdout.contains("ALLOWED"), "\(output.stdout)")
        // The tests run as root, as CI does: the self-test gives up root as a helper does.
        if getuid() == 0 {
            #expect(
                lines.first?.contains("runs as nobody (65534:65534)") == true || lines.first?.contains("runs as imagepipe (") == true,
                "\(output.stdout)")
            #expect(lines.contains { $0.hasPrefix("capabilities: refused") && $0.contains("effective 0, permitted 0, ambient 0, bounding 0") })
        }
    }

    /// What `version --verbose` tells an operator: the image libraries a helper loads, as the files
    /// and Debian packages they are, and what the sandbox does on this kernel.
    @Test func versionVerboseNamesTheLinkedImageLibrariesAndTheSandboxOfThisKernel() throws {
        let output = try CommandRunner.run(["version", "--verbose"])
        #expect(output.status == 0, "\(output.stderr)")
        let text = output.stdout
        // libvips with its version, and the codecs it loads, each with the Debian package and its update.
        #expect(text.contains("  libvips 8."), "\(text)")
        for library in ["libheif", "libde265", "libjpeg", "libpng16", "libwebp", "libtiff"] {
            let line = text.split(separator: "\n").first { $0.hasPrefix("  \(library):") }
            #expect(line?.contains("Debian ") == true && line?.contains(".so") == true, "\(library): \(line ?? "missing")")
        }
        #expect(text.contains("libvips42 8.14.1-3+deb12u"), "the package and its update: \(text)")
        #expect(text.contains("seccomp: filters that trap and refuse (an allow-list of"), "\(text)")
        #expect(text.contains("Landlock: ABI "), "\(text)")
        // Run as root, as CI runs the tests: helpers would give it up.
        if getuid() == 0 {
            #expect(text.contains("image helpers run as: nobody (65534:65534)") || text.contains("image helpers run as: imagepipe ("), "\(text)")
        } else {
            #expect(text.contains("image helpers run as: this user (uid \(getuid()))"), "\(text)")
        }
    }

    @Test func helpersAreSandboxedForksOfAZygoteAndHoldNoSecretAndNoDescriptorOfTheWorkers() throws {
        try FileManager.default.createDirectory(atPath: directory.url("queue/inbox"), withIntermediateDirectories: true)
        let worker = try WorkerProcess(
            ["watch", directory.url("queue"), "--dest", directory.url("out"), "--jobs", "2", "--status-interval", "0"],
            log: directory.url("worker.log"), environment: Self.secrets)
        defer { worker.send(SIGKILL) }
        #expect(worker.waitForLog("watching"), "\(worker.log)")
        let helpers = ImageHelpers.of(worker.process.processIdentifier)
        #expect(helpers.count == 2, "one helper per --jobs: \(helpers)")
        for helper in helpers {
            let status = ImageHelpers.status(helper)
            #expect(status["Seccomp"] == "2", "\(status)")
            #expect(status["NoNewPrivs"] == "1", "\(status)")
            expectNothingOfTheWorkers(in: helper)
            // libvips' loaders for what imagepipe never reads are not even mapped: ImageMagick, PDF, OpenSlide.
            let libraries = ImageHelpers.libraries(helper)
            #expect(libraries.contains { $0.contains("vips-heif") }, "HEIC and AVIF are read: \(libraries.sorted())")
            #expect(libraries.contains { $0.contains("vips-jxl") }, "JPEG XL is written: \(libraries.sorted())")
            for unused in ["libMagickCore", "libpoppler", "libopenslide", "vips-magick", "vips-poppler", "vips-openslide"] {
                #expect(!libraries.contains { $0.contains(unused) }, "\(unused) is loaded")
            }
        }
        // The worker decodes no image, and starts no libvips loader of its own.
        let workerLibraries = ImageHelpers.libraries(worker.process.processIdentifier)
        #expect(!workerLibraries.contains { $0.contains("vips-modules") }, "\(workerLibraries.filter { $0.contains("vips") })")
        // Every helper is a fork of one zygote, which loaded libvips once and holds nothing of the
        // worker's either: libvips where the zygote has it (a process started from the file gets an
        // address of its own), the zygote's flag gone from the helper's command line.
        let zygote = try #require(ImageHelpers.zygote(of: worker.process.processIdentifier), "no zygote: \(helpers)")
        expectNothingOfTheWorkers(in: zygote)
        let libvips = try #require(ImageHelpers.address(of: "libvips.so", in: zygote))
        for helper in helpers {
            #expect(ImageHelpers.address(of: "libvips.so", in: helper) == libvips, "helper \(helper) is no fork of the zygote")
            #expect(!ImageHelpers.commandLine(helper).contains("--zygote"), "\(ImageHelpers.commandLine(helper))")
        }
        worker.send(SIGTERM)
        #expect(worker.waitForExit(seconds: 60) == 0, "\(worker.log)")
    }

    /// A process the worker started holds none of the secrets it was given, and of its descriptors
    /// only its standard streams and its channel (3): no queue lock, no store or database socket.
    func expectNothingOfTheWorkers(in pid: pid_t) {
        let environment = ImageHelpers.environment(pid)
        #expect(!environment.isEmpty, "the environment of \(pid) could not be read")
        for (name, value) in Self.secrets {
            #expect(!environment.contains { $0.hasPrefix(name + "=") || $0.contains(value) }, "\(name) reached \(pid)")
        }
        #expect(ImageHelpers.descriptors(pid) == [0, 1, 2, 3])
    }

    /// A zygote that died leaves helpers started from the executable; a helper's crash starts a new
    /// zygote, whose forks have a layout of their own.
    @Test func aDeadZygoteLeavesHelpersStartedFromTheFileAndACrashStartsANewOne() throws {
        try FileManager.default.createDirectory(atPath: directory.url("queue/inbox"), withIntermediateDirectories: true)
        let worker = try WorkerProcess(
            ["watch", directory.url("queue"), "--dest", directory.url("out"), "--jobs", "1", "--status-interval", "0"],
            log: directory.url("worker.log"))
        defer { worker.send(SIGKILL) }
        #expect(worker.waitForLog("watching"), "\(worker.log)")
        let pid = worker.process.processIdentifier
        let zygote = try #require(ImageHelpers.zygote(of: pid))
        let first = try #require(ImageHelpers.of(pid).first)
        let libvips = try #require(ImageHelpers.address(of: "libvips.so", in: zygote))
        kill(zygote, SIGKILL)
        #expect(eventually { ImageHelpers.hasEnded(zygote) })
        // A damaged image fails and retires its helper; the next job needs a new one, which the dead
        // zygote cannot fork.
        var damaged = Fixtures.data("images/formats/landscape.jpg")
        damaged.removeSubrange(3000...)
        InboxDelivery.deliver(damaged, to: directory.url("queue/inbox"), as: "damaged.jpg")
        #expect(
            eventually(seconds: 120) { FileManager.default.fileExists(atPath: directory.url("queue/failed/damaged.jpg.error.json")) }, "\(worker.log)"
        )
        InboxDelivery.deliver(Fixtures.data("images/formats/small-200x150.jpg"), to: directory.url("queue/inbox"), as: "after.jpg")
        #expect(eventually(seconds: 120) { FileManager.default.fileExists(atPath: directory.url("queue/done/after.jpg.json")) }, "\(worker.log)")
        #expect(worker.log.contains("zygote ended"), "\(worker.log)")
        let started = try #require(ImageHelpers.of(pid).first { $0 != first }, "\(worker.log)")
        #expect(ImageHelpers.zygote(of: pid) == nil)
        let randomized = (try? String(contentsOfFile: "/proc/sys/kernel/randomize_va_space", encoding: .utf8))?.hasPrefix("0") == false
        if randomized { #expect(ImageHelpers.address(of: "libvips.so", in: started) != libvips, "started from the executable") }

        // A crash: the next helper comes from a new zygote.
        kill(started, SIGKILL)
        InboxDelivery.deliver(Fixtures.data("images/formats/small-200x150.jpg"), to: directory.url("queue/inbox"), as: "later.jpg")
        #expect(eventually(seconds: 120) { FileManager.default.fileExists(atPath: directory.url("queue/done/later.jpg.json")) }, "\(worker.log)")
        let renewed = try #require(ImageHelpers.zygote(of: pid), "a crash starts a zygote: \(worker.log)")
        let helper = try #require(ImageHelpers.of(pid).first, "\(worker.log)")
        #expect(ImageHelpers.address(of: "libvips.so", in: helper) == ImageHelpers.address(of: "libvips.so", in: renewed))
        worker.send(SIGTERM)
        #expect(worker.waitForExit(seconds: 60) == 0, "\(worker.log)")
    }

    /// A helper forked by the zygote dies with its worker, even mid-job: a fork clears the death
    /// signal, and the helper, once the worker adopted it, asks for it again.
    @Test func aForkedHelperWorkingOnAJobDiesWithItsWorker() throws {
        try FileManager.default.createDirectory(atPath: directory.url("queue/inbox"), withIntermediateDirectories: true)
        let worker = try WorkerProcess(
            [
                "watch", directory.url("queue"), "--dest", directory.url("out"), "--jobs", "1", "--status-interval", "0",
                "--variant", ImageHelpers.longJob.variant,
            ], log: directory.url("worker.log"))
        defer { worker.send(SIGKILL) }
        #expect(worker.waitForLog("watching"), "\(worker.log)")
        let pid = worker.process.processIdentifier
        let zygote = try #require(ImageHelpers.zygote(of: pid), "\(worker.log)")
        InboxDelivery.deliver(Fixtures.data(ImageHelpers.longJob.fixture), to: directory.url("queue/inbox"), as: "long.jpg")
        let helper = try #require(ImageHelpers.busy(of: pid), "no helper was seen working: \(worker.log)")
        #expect(ImageHelpers.address(of: "libvips.so", in: helper) == ImageHelpers.address(of: "libvips.so", in: zygote), "a fork")
        worker.send(SIGKILL)
        // Its job has seconds of encoding left: only the death signal ends it this soon.
        #expect(eventually(seconds: 5) { ImageHelpers.hasEnded(helper) && ImageHelpers.hasEnded(zygote) }, "\(ImageHelpers.status(helper))")
    }

    /// Three photos as AVIF, one at a time: the largest first (a batch starts with the largest
    /// original), the long job a test kills its helper in, then two that take seconds.
    func slowBatch() throws -> WorkerProcess {
        CommandRunner.copyFixture(ImageHelpers.longJob.fixture, to: directory, as: "src/photo.jpg")
        for name in ["landscape.jpg", "tall.jpg"] {
            CommandRunner.copyFixture("images/formats/" + name, to: directory, as: "src/" + name)
        }
        return try WorkerProcess(
            [
                "batch", directory.url("src"), "--dest", directory.url("out"), "--manifest", directory.url("manifest.jsonl"),
                "--jobs", "1", "--variant", ImageHelpers.longJob.variant,
            ], log: directory.url("batch.log"))
    }

    func manifest() throws -> [JobResult] {
        let text = try String(contentsOfFile: directory.url("manifest.jsonl"), encoding: .utf8)
        return try text.split(separator: "\n").map { try JSONDecoder().decode(JobResult.self, from: Data($0.utf8)) }
    }

    @Test(arguments: [(SIGSEGV, "SIGSEGV"), (SIGKILL, "SIGKILL")])
    func aHelperThatDiesMidJobFailsThatImageAndTheBatchGoesOn(signal: Int32, name: String) throws {
        let batch = try slowBatch()
        defer { batch.send(SIGKILL) }
        let helper = try #require(ImageHelpers.busy(of: batch.process.processIdentifier), "no helper was seen working: \(batch.log)")
        let started = ImageHelpers.of(batch.process.processIdentifier)
        kill(helper, signal)
        #expect(batch.waitForExit(seconds: 180) == 1, "a failed image makes the batch exit 1: \(batch.log)")

        let results = try manifest()
        #expect(results.map(\.source).sorted() == ["landscape.jpg", "photo.jpg", "tall.jpg"], "each image once")
        let failed = results.filter { $0.status == .failed }
        #expect(failed.count == 1, "\(results.map { "\($0.source) \($0.status) \($0.error ?? "")" })")
        if let crash = failed.first {
            #expect(crash.errorCode == .decoderCrashed)
            #expect(crash.error?.contains(name) == true, "\(crash.error ?? "")")
            #expect(crash.error?.contains(crash.source) == true, "the reason names the source: \(crash.error ?? "")")
        }
        #expect(results.filter { $0.status == .done }.count == 2)
        #expect(batch.log.contains("image helper ended"), "\(batch.log)")
        // The batch reaped every helper it started as it exited: none is left running or a zombie.
        #expect(started.allSatisfy { ImageHelpers.commandLine($0).dropFirst().first != "image-helper" }, "\(started)")
    }

    @Test func aStoppedHelperIsKilledAtTheJobTimeoutAndTheWorkerGoesOn() throws {
        try FileManager.default.createDirectory(atPath: directory.url("queue/inbox"), withIntermediateDirectories: true)
        let worker = try WorkerProcess(
            [
                "watch", directory.url("queue"), "--dest", directory.url("out"), "--jobs", "1", "--status-interval", "0",
                "--job-timeout", "3", "--variant", "small=200x,jpeg,q80", "--retry-delay", "0.1",
            ], log: directory.url("worker.log"))
        defer { worker.send(SIGKILL) }
        #expect(worker.waitForLog("watching"), "\(worker.log)")
        let helper = try #require(ImageHelpers.of(worker.process.processIdentifier).first)
        kill(helper, SIGSTOP)
        InboxDelivery.deliver(Fixtures.data("images/formats/landscape.jpg"), to: directory.url("queue/inbox"), as: "stuck.jpg")
        #expect(eventually(seconds: 120) { FileManager.default.fileExists(atPath: directory.url("queue/done/stuck.jpg.json")) }, "\(worker.log)")
        #expect(worker.log.contains("job_timeout"), "the first attempt timed out: \(worker.log)")
        #expect(worker.log.contains("reason=timeout") || worker.log.contains("\"reason\":\"timeout\""), "\(worker.log)")
        // The stopped helper was killed and replaced; the next job runs as usual.
        #expect(!ImageHelpers.of(worker.process.processIdentifier).contains(helper))
        InboxDelivery.deliver(Fixtures.data("images/formats/tall.jpg"), to: directory.url("queue/inbox"), as: "next.jpg")
        #expect(eventually(seconds: 60) { FileManager.default.fileExists(atPath: directory.url("queue/done/next.jpg.json")) }, "\(worker.log)")
        worker.send(SIGTERM)
        #expect(worker.waitForExit(seconds: 60) == 0, "\(worker.log)")
    }

    @Test func aQueueJobWhoseHelperCrashesTwiceFailsForGoodAndTheWorkerGoesOn() throws {
        try FileManager.default.createDirectory(atPath: directory.url("queue/inbox"), withIntermediateDirectories: true)
        let worker = try WorkerProcess(
            [
                "watch", directory.url("queue"), "--dest", directory.url("out"), "--jobs", "1", "--status-interval", "0",
                "--variant", ImageHelpers.longJob.variant, "--retry-delay", "0.1", "--max-attempts", "5",
                "--metrics-address", "127.0.0.1:0", "--check-interval", "0.2",
            ], log: directory.url("worker.log"))
        defer { worker.send(SIGKILL) }
        let address = try #require(worker.monitoringAddress(), "\(worker.log)")
        InboxDelivery.deliver(Fixtures.data(ImageHelpers.longJob.fixture), to: directory.url("queue/inbox"), as: "poison.jpg")
        // Its first attempt and its retry, each killed mid-job: a crash is taken to be the image's.
        // A killed helper may still use CPU while the kernel tears it down: never taken for the next.
        var killed: Set<pid_t> = []
        for kill in 1...2 {
            let helper = try #require(
                ImageHelpers.busy(of: worker.process.processIdentifier, excluding: killed), "kill \(kill): \(worker.log)")
            Glibc.kill(helper, SIGSEGV)
            killed.insert(helper)
            #expect(eventually { ImageHelpers.status(helper).isEmpty }, "the helper is reaped")
        }
        let record = directory.url("queue/failed/poison.jpg.error.json")
        #expect(eventually(seconds: 120) { FileManager.default.fileExists(atPath: record) }, "\(worker.log)")
        let failure = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: record))) as? [String: Any]
        #expect(failure?["error_code"] as? String == "decoder_crashed", "\(failure ?? [:])")
        #expect(failure?["attempts"] as? Int == 2, "the second crash is final, not the fifth attempt: \(failure ?? [:])")
        #expect((failure?["error"] as? String)?.contains("SIGSEGV") == true, "\(failure ?? [:])")

        // The worker goes on: the next jobs are done, each once.
        for name in ["next-1.jpg", "next-2.jpg"] {
            InboxDelivery.deliver(Fixtures.data("images/formats/small-200x150.jpg"), to: directory.url("queue/inbox"), as: name)
        }
        #expect(
            eventually(seconds: 120) {
                ["next-1.jpg", "next-2.jpg"].allSatisfy { FileManager.default.fileExists(atPath: directory.url("queue/done/\($0).json")) }
            }, "\(worker.log)")
        let scrape = PrometheusText(LoopbackHTTP.get("http://\(address)/metrics").body)
        #expect(scrape.value("imagepipe_helper_restarts_total", ["reason": "crashed"]) == 2, "\(scrape.text)")
        #expect(scrape.value("imagepipe_job_retries_total", ["error_code": "decoder_crashed"]) == 1, "\(scrape.text)")
        #expect(scrape.value("imagepipe_jobs_total", ["outcome": "failed", "error_code": "decoder_crashed"]) == 1, "\(scrape.text)")
        #expect(scrape.value("imagepipe_jobs_total", ["outcome": "done"]) == 2, "\(scrape.text)")
        worker.send(SIGTERM)
        #expect(worker.waitForExit(seconds: 60) == 0, "\(worker.log)")
    }

    /// Runs the worker under an outer seccomp filter that answers Landlock's first call with `errno`,
    /// as a kernel without Landlock (ENOSYS) or a container that refuses it (EPERM) would.
    func runRefusingLandlock(_ errno: Int32) throws -> CommandRunner.Output {
        CommandRunner.copyFixture("images/formats/landscape.jpg", to: directory, as: "src/landscape.jpg")
        let script = """
            import ctypes, os, struct, sys
            libc = ctypes.CDLL(None, use_errno=True)
            def ins(code, jt, jf, k): return struct.pack("HBBI", code, jt, jf, k)
            # Load the syscall number; landlock_create_ruleset (444 on every architecture) gets errno, all else passes.
            prog = ins(0x20, 0, 0, 0) + ins(0x15, 0, 1, 444) + ins(0x06, 0, 0, 0x00050000 | \(errno)) + ins(0x06, 0, 0, 0x7fff0000)
            buf = ctypes.create_string_buffer(prog)
            class Fprog(ctypes.Structure): _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
            fprog = Fprog(len(prog) // 8, ctypes.cast(buf, ctypes.c_void_p))
            assert libc.prctl(38, 1, 0, 0, 0) == 0
            assert libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) == 0, ctypes.get_errno()
            os.execv(sys.argv[1], sys.argv[1:])
            """
        return try CommandRunner.run(
            executable: "/usr/bin/env",
            [
                "python3", "-c", script, CommandRunner.binary, "batch", directory.url("src"), "--dest", directory.url("out"),
                "--variant", "small=200x,jpeg,q80",
            ])
    }

    @Test func aSandboxThatCannotBeAppliedStopsTheWorkerNamingTheCause() throws {
        let output = try runRefusingLandlock(EPERM)
        #expect(output.status == 2, "\(output.stderr)")
        #expect(output.stderr.contains("image helper cannot start"), "\(output.stderr)")
        #expect(output.stderr.contains("Landlock"), "the cause is named: \(output.stderr)")
        #expect(output.stderr.contains("--sandbox off"), "\(output.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory.url("out/landscape-small.jpg")))
    }

    @Test func aKernelWithoutLandlockGetsSeccompAloneAndIsToldSo() throws {
        let output = try runRefusingLandlock(ENOSYS)
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stderr.contains("no Landlock"), "\(output.stderr)")
        #expect(FileManager.default.fileExists(atPath: directory.url("out/landscape-small.jpg")))
    }
}
