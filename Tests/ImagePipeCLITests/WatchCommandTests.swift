import Foundation
#if canImport(Glibc)
import Glibc
#endif
import ImagePipe
import ImagePipeQueue
import ImagePipeTestSupport
import ImagePipeVips
import Testing

/// `imagepipe watch` end to end: the real binary, real inotify, real signals and `kill -9`.
@Suite(.offThePool, .serialized) struct WatchCommandTests {
    let directory = TemporaryDirectory(prefix: "imagepipe-watch")
    var queue: String { directory.url("queue") }

    func start(_ extra: [String] = [], log: String) throws -> WorkerProcess {
        try WorkerProcess(
            [
                "watch", queue, "--dest", directory.url("out"), "--jobs", "1", "--rescan-interval", "1",
                "--status-interval", "0",
            ] + extra, log: directory.url(log))
    }

    /// Starts a worker on a queue whose inbox exists and waits until it watches.
    func startWatching(_ extra: [String] = [], log: String) throws -> WorkerProcess {
        try FileManager.default.createDirectory(atPath: queue + "/inbox", withIntermediateDirectories: true)
        let worker = try start(extra, log: log)
        #expect(worker.waitForLog("watching"), "\(worker.log)")
        return worker
    }

    /// Delivers a fixture the safe way: copied under a hidden name, then renamed into the inbox.
    func deliver(_ fixture: String, as name: String) {
        InboxDelivery.deliver(Fixtures.data(fixture), to: queue + "/inbox", as: name)
    }

    func files(_ sub: String) -> [String] { directory.files(under: "queue/" + sub).filter { !$0.hasSuffix("/.lock") && $0 != ".lock" } }

    func record(_ name: String) throws -> JobResult {
        try JSONDecoder().decode(JobResult.self, from: Data(contentsOf: URL(fileURLWithPath: queue + "/done/" + name + ".json")))
    }

    @Test func renamedNestedAndSlowlyWrittenDeliveriesAreProcessedWhole() throws {
        let worker = try startWatching(["--log-level", "debug"], log: "worker.log")

        deliver("images/formats/landscape.jpg", as: "renamed.jpg")
        deliver("images/formats/tiny.png", as: "2024/trip/nested.png")

        // A writer that creates the file in the inbox itself and pauses for seconds between writes.
        let whole = try Data(contentsOf: URL(fileURLWithPath: CommandRunner.fixtures + "/images/formats/landscape.jpg"))
        let slowPath = queue + "/inbox/slow.jpg"
        // open(2) directly: FileManager.createFile would write a temporary file and rename it in.
        let fd = open(slowPath, O_WRONLY | O_CREAT | O_EXCL, 0o644)
        #expect(fd >= 0)
        func write(_ part: Data) { part.withUnsafeBytes { _ = Glibc.write(fd, $0.baseAddress, $0.count) } }
        write(whole.prefix(whole.count / 3))
        // The worker sees the file (inotify, then a rescan) and leaves it to its writer.
        #expect(worker.waitForLog("still being written; waiting for its writer to close it"), "\(worker.log)")
        write(whole.dropFirst(whole.count / 3).prefix(whole.count / 3))
        let looked = worker.log.components(separatedBy: "still being written").count
        #expect(eventually { worker.log.components(separatedBy: "still being written").count > looked }, "a rescan looked again")
        #expect(FileManager.default.fileExists(atPath: slowPath), "not claimed while its writer has it open")
        write(whole.dropFirst(2 * (whole.count / 3)))
        close(fd)

        #expect(eventually { files("done").count == 6 }, "\(worker.log)")
        #expect(files("failed").isEmpty, "\(worker.log)")
        let slow = try record("slow.jpg")
        #expect(slow.status == .done && slow.bytes == whole.count)
        #expect(try record("2024/trip/nested.png").variants.first?.key == "2024/trip/nested-large.jpg")
        #expect(FileManager.default.fileExists(atPath: directory.url("out/2024/trip/nested-thumb.webp")))

        worker.send(SIGTERM)
        #expect(worker.waitForExit(seconds: 30) == 0)
        #expect(worker.log.contains("stopped"))
        #expect(files("processing").isEmpty)
    }

    @Test(.requiresRoot("run the worker as another user"), .requires(.setpriv))
    func anotherUsersSlowWriterIsWaitedFor() throws {
        // The worker runs as nobody; the producer (this process, root) writes straight into the inbox.
        // Without CAP_LEASE the worker can neither take a lease on root's file nor read root's /proc.
        chmod(directory.path, 0o777)
        for folder in [queue, directory.url("out")] {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            chmod(folder, 0o777)
        }
        let worker = try WorkerProcess(
            [
                "watch", queue, "--dest", directory.url("out"), "--jobs", "1", "--rescan-interval", "0.2",
                "--status-interval", "0", "--quiet-period", "2", "--log-level", "debug",
            ],
            log: directory.url("nobody.log"), asNobody: true)
        #expect(worker.waitForLog("watching"), "\(worker.log)")

        let whole = try Data(contentsOf: URL(fileURLWithPath: CommandRunner.fixtures + "/images/formats/landscape.jpg"))
        let path = queue + "/inbox/slow.jpg"
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o644)
        #expect(fd >= 0)
        func write(_ part: Data) { part.withUnsafeBytes { _ = Glibc.write(fd, $0.baseAddress, $0.count) } }
        // A writer the worker cannot see pauses between its writes, each time within the quiet period.
        for third in 0..<3 {
            let looked = worker.log.components(separatedBy: "changed within the quiet period").count
            write(whole.dropFirst(third * (whole.count / 3)).prefix(third == 2 ? whole.count : whole.count / 3))
            if third < 2 {
                #expect(
                    eventually { worker.log.components(separatedBy: "changed within the quiet period").count > looked },
                    "the worker looked at it and waited: \(worker.log)")
            }
        }
        #expect(FileManager.default.fileExists(atPath: path), "not taken while it kept changing")
        close(fd)

        #expect(eventually { files("done").contains("slow.jpg.json") }, "\(worker.log)")
        #expect(files("failed").isEmpty, "\(worker.log)")
        #expect(try record("slow.jpg").bytes == whole.count)
        #expect(worker.log.contains("belongs to another user"))
        worker.send(SIGTERM)
        #expect(worker.waitForExit(seconds: 30) == 0)
    }

    @Test func killNineLosesNothingAndTwoWorkersShareTheQueue() throws {
        try FileManager.default.createDirectory(atPath: queue + "/inbox", withIntermediateDirectories: true)
        let good = [
            "images/formats/landscape.jpg", "images/formats/small-400x300.jpg", "images/formats/alpha.png",
            "images/formats/landscape-heic.heic", "images/exif-orientation/Landscape_6.jpg",
        ]
        var names: [String: Bool] = [:]
        for index in 0..<30 {
            let fixture = good[index % good.count]
            let name = "burst/\(index)-\((fixture as NSString).lastPathComponent)"
            deliver(fixture, as: name)
            names[name] = true
        }
        deliver("hostile/truncated.jpg", as: "burst/broken.jpg")
        // Named apart from broken.jpg: both stems would name the same output keys (`broken-large.jpg`),
        // and a truncated PNG that decodes in part would make broken.jpg a key collision.
        deliver("hostile/truncated.png", as: "burst/damaged.png")
        names["burst/broken.jpg"] = false
        names["burst/damaged.png"] = false

        let first = try start(log: "first.log")
        #expect(eventually { files("done").count >= 6 })
        first.send(SIGKILL)
        #expect(first.waitForExit(seconds: 10) == 137)
        let leftBehind = files("processing").filter { !($0 as NSString).lastPathComponent.hasPrefix(".") }.count
        let second = try start(log: "second.log"), third = try start(log: "third.log")
        #expect(
            eventually { files("inbox").isEmpty && files("processing").isEmpty && files("done").count + files("failed").count == 2 * names.count },
            "\(files("inbox")) \(files("processing")) \(files("done")) \(files("failed"))\n\(second.log)\n\(third.log)")
        second.send(SIGTERM)
        third.send(SIGTERM)
        #expect(second.waitForExit(seconds: 30) == 0)
        #expect(third.waitForExit(seconds: 30) == 0)

        // Every delivery ends in exactly one place, under its own name (no second copy).
        for (name, isGood) in names {
            let inDone = FileManager.default.fileExists(atPath: queue + "/done/" + name)
            let inFailed = FileManager.default.fileExists(atPath: queue + "/failed/" + name)
            #expect(inDone == isGood && inFailed == !isGood, "\(name)")
            if isGood {
                let result = try record(name)
                for variant in result.variants {
                    #expect(FileManager.default.fileExists(atPath: directory.url("out/" + variant.key)), "\(variant.key)")
                }
            }
        }
        #expect(files("done").count == 2 * names.values.filter { $0 }.count)
        // Reprocessing after the crash wrote the same keys again, never a second set of outputs (the
        // killed worker may leave files it had not yet moved into place, under temporary names only).
        let outputs = directory.files(under: "out").filter { !(($0 as NSString).lastPathComponent.hasPrefix(".imagepipe-") && $0.hasSuffix(".tmp")) }
        #expect(outputs.count == 3 * names.values.filter { $0 }.count)
        let failure = try JSONDecoder().decode(
            FailureRecord.self, from: Data(contentsOf: URL(fileURLWithPath: queue + "/failed/burst/broken.jpg.error.json")))
        let text = (try? String(contentsOfFile: queue + "/failed/burst/broken.jpg.error.json", encoding: .utf8)) ?? ""
        #expect(failure.errorCode == .corruptImage && failure.attempts == 1, "\(text)")
        #expect(leftBehind > 0, "the killed worker held claimed jobs")
        #expect((second.log + third.log).contains("recovered"), "its jobs were returned to the inbox")
    }

    @Test func exitWhenEmptyWorksOffTheBacklogAndWaitsForAFileStillBeingWritten() throws {
        try FileManager.default.createDirectory(atPath: queue + "/inbox", withIntermediateDirectories: true)
        for index in 0..<4 { deliver("images/exif-orientation/Landscape_\(index).jpg", as: "\(index).jpg") }
        deliver("hostile/truncated.jpg", as: "broken.jpg")
        // A writer still has this one open: the inbox is not empty while it writes.
        let whole = try Data(contentsOf: URL(fileURLWithPath: CommandRunner.fixtures + "/images/formats/landscape.jpg"))
        let fd = open(queue + "/inbox/late.jpg", O_WRONLY | O_CREAT | O_EXCL, 0o644)
        #expect(fd >= 0)
        whole.prefix(1000).withUnsafeBytes { _ = Glibc.write(fd, $0.baseAddress, $0.count) }

        let worker = try start(["--exit-when-empty", "--log-level", "debug"], log: "worker.log")
        #expect(eventually { files("done").count == 8 && files("failed").count == 2 }, "\(worker.log)")
        // Each look that finds only the file being written decides again not to exit: two more looks,
        // and the worker is still there.
        let looked = worker.log.components(separatedBy: "still being written").count
        #expect(eventually { worker.log.components(separatedBy: "still being written").count >= looked + 2 }, "\(worker.log)")
        #expect(worker.waitForExit(seconds: 0) == nil, "it waits for the file being written: \(worker.log)")
        whole.dropFirst(1000).withUnsafeBytes { _ = Glibc.write(fd, $0.baseAddress, $0.count) }
        close(fd)

        #expect(worker.waitForExit(seconds: 60) == 0, "\(worker.log)")
        #expect(worker.log.contains("the queue is empty"))
        #expect(files("done").count == 10 && files("failed").count == 2 && files("inbox").isEmpty)
        #expect(files("processing").isEmpty, "no claim area is left behind")
        #expect(try record("late.jpg").bytes == whole.count)
    }

    @Test func sigtermStopsClaimingAndExitsZero() throws {
        try FileManager.default.createDirectory(atPath: queue + "/inbox", withIntermediateDirectories: true)
        let worker = try start(["--shutdown-timeout", "20"], log: "worker.log")
        #expect(worker.waitForLog("watching"))
        for index in 0..<20 { deliver("images/exif-orientation/Landscape_\(index % 9).jpg", as: "\(index).jpg") }
        #expect(eventually { files("done").count >= 2 })
        worker.send(SIGTERM)
        #expect(worker.waitForExit(seconds: 30) == 0, "\(worker.log)")
        // Jobs were either finished or left for the next worker; none is stranded in processing/.
        #expect(files("processing").isEmpty)
        #expect(files("done").count / 2 + files("inbox").count == 20)
        #expect(files("done").count < 40, "claiming stopped before the inbox was drained")
    }

    @Test func pickupLatencyOfAnIdleWorker() throws {
        try FileManager.default.createDirectory(atPath: queue + "/inbox", withIntermediateDirectories: true)
        let worker = try start(["--log-level", "debug"], log: "worker.log")
        #expect(worker.waitForLog("watching"))
        var latencies: [Double] = []
        for index in 0..<10 {
            let name = "latency-\(index).png"
            let delivered = Date()
            deliver("images/formats/tiny.png", as: name)
            #expect(worker.waitForLog("claimed source=\(name)"))
            guard let line = worker.log.split(separator: "\n").first(where: { $0.hasSuffix("claimed source=\(name)") }),
                let claimed = ISO8601DateFormatter.withFractions.date(from: String(line.prefix(24)))
            else { continue }
            latencies.append(claimed.timeIntervalSince(delivered) * 1000)
            #expect(eventually { files("done").contains(name + ".json") })
        }
        worker.send(SIGTERM)
        #expect(worker.waitForExit(seconds: 30) == 0)
        #expect(latencies.count == 10)
        let sorted = latencies.sorted()
        // Reported, not asserted: shared machines make timings noisy.
        print(
            "pickup latency over \(sorted.count) deliveries: median \(String(format: "%.1f", sorted[sorted.count / 2])) ms, max \(String(format: "%.1f", sorted.last ?? 0)) ms"
        )
    }

    /// Links, FIFOs and names that are not valid UTF-8, delivered to the real binary; then SIGHUP,
    /// what a closing terminal sends, stops it like SIGTERM.
    @Test func linksAndFIFOsFailNonUTF8NamesAreProcessedAndSIGHUPStopsGracefully() throws {
        let secret = directory.url("secret/private.jpg")
        try FileManager.default.createDirectory(atPath: directory.url("secret"), withIntermediateDirectories: true)
        try Data(contentsOf: URL(fileURLWithPath: CommandRunner.fixtures + "/images/formats/landscape.jpg")).write(to: URL(fileURLWithPath: secret))
        let worker = try startWatching(log: "worker.log")

        #expect(symlink(secret, queue + "/inbox/innocent.jpg") == 0)
        #expect(mkfifo(queue + "/inbox/pipe.jpg", 0o644) == 0)
        deliver("images/formats/tiny.png", as: ".raw-incoming")
        let rawName = RawPath(queue + "/inbox/bad").appending(RawPath(bytes: [0xFF, 0x2E, 0x70, 0x6E, 0x67]))  // "bad/\xFF.png"
        try FileManager.default.createDirectory(atPath: queue + "/inbox/bad", withIntermediateDirectories: true)
        #expect(rawName.withCString { rename(queue + "/inbox/.raw-incoming", $0) } == 0)

        #expect(eventually { files("failed").count == 4 && files("done").count == 2 }, "\(files("failed")) \(files("done"))\n\(worker.log)")
        for name in ["innocent.jpg", "pipe.jpg"] {
            let text = try String(contentsOfFile: queue + "/failed/" + name + ".error.json", encoding: .utf8)
            #expect(text.filter { $0 == "\n" }.count == 1, "one line")
            let failure = try JSONDecoder().decode(FailureRecord.self, from: Data(text.utf8))
            #expect(failure.errorCode == .notARegularFile && failure.error.contains(name), "\(failure.error)")
        }
        #expect(!directory.files(under: "out").contains { $0.contains("innocent") }, "the link's target was not published")
        #expect(files("done") == ["bad/%FF.png", "bad/%FF.png.json"])
        #expect(FileManager.default.fileExists(atPath: directory.url("out/bad/%FF-large.jpg")))

        worker.send(SIGHUP)
        #expect(worker.waitForExit(seconds: 30) == 0, "\(worker.log)")
        #expect(worker.log.contains("SIGHUP received") && worker.log.contains("stopped"))
        #expect(files("processing").isEmpty, "the claim area went with a graceful stop")
    }

    /// A worker storing into an S3 endpoint that accepts connections and never answers: its job hangs.
    func startWithAStuckJob(_ extra: [String], blackhole: Blackhole) throws -> WorkerProcess {
        try FileManager.default.createDirectory(atPath: queue + "/inbox", withIntermediateDirectories: true)
        let worker = try WorkerProcess(
            [
                "watch", queue, "--dest", "s3://bucket/media", "--endpoint", "http://127.0.0.1:\(blackhole.port)",
                "--region", "us-east-1", "--jobs", "1", "--status-interval", "0", "--log-level", "debug",
            ] + extra,
            log: directory.url("stuck.log"),
            environment: ["AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "HOME": directory.path])
        #expect(worker.waitForLog("watching"))
        deliver("images/formats/tiny.png", as: "stuck.png")
        #expect(eventually { blackhole.connections > 0 }, "\(worker.log)")
        return worker
    }

    @Test func aStuckJobNeverKeepsTheProcessPastTheShutdownTimeout() throws {
        let blackhole = try Blackhole()
        let worker = try startWithAStuckJob(["--shutdown-timeout", "1"], blackhole: blackhole)
        let sent = Date()
        worker.send(SIGTERM)
        let status = worker.waitForExit(seconds: 30)
        let took = Date().timeIntervalSince(sent)
        #expect(status == 0, "\(worker.log)")
        #expect(took < 1 + 2, "exited \(took) s after SIGTERM with --shutdown-timeout 1")
        #expect(
            TextLog.hasLine(worker.log, "warning", "shutdown timeout: returned the unfinished jobs", ["jobs": "1", "to": "inbox"]),
            "\(worker.log)")
        #expect(files("inbox") == ["stuck.png"] && files("processing").isEmpty)
    }

    @Test func aSecondSignalStopsAtOnce() throws {
        let blackhole = try Blackhole()
        let worker = try startWithAStuckJob(["--shutdown-timeout", "120"], blackhole: blackhole)
        worker.send(SIGTERM)
        #expect(worker.waitForLog("shutting down"))
        let sent = Date()
        worker.send(SIGINT)
        let status = worker.waitForExit(seconds: 30)
        #expect(status == 0, "\(worker.log)")
        #expect(Date().timeIntervalSince(sent) < 3, "not the 120 s shutdown timeout")
        #expect(worker.log.contains("SIGINT received again: stopping at once"))
        #expect(files("inbox") == ["stuck.png"] && files("processing").isEmpty)
    }

    @Test func retrySendsFailedJobsBackToARunningWorker() throws {
        let worker = try startWatching(log: "worker.log")
        deliver("hostile/truncated.jpg", as: "2024/photo.jpg")
        deliver("hostile/truncated.jpg", as: "other.jpg")
        #expect(eventually { files("failed").count == 4 }, "\(worker.log)")
        // The cause is put right (here: the file itself), then the job is sent back.
        try Data(contentsOf: URL(fileURLWithPath: CommandRunner.fixtures + "/images/formats/tiny.png"))
            .write(to: URL(fileURLWithPath: queue + "/failed/2024/photo.jpg"))

        let retried = try CommandRunner.run(["retry", queue, "2024/photo.jpg", "missing.jpg"])
        #expect(retried.status == 1, "a path matched nothing")
        #expect(retried.stdout == "failed/2024/photo.jpg -> inbox/2024/photo.jpg\n")
        #expect(retried.stderr.contains("no failed job at missing.jpg"))
        #expect(eventually { files("done").contains("2024/photo.jpg.json") }, "\(worker.log)")
        #expect(files("failed") == ["other.jpg", "other.jpg.error.json"], "the old record is gone, the other job untouched")

        let all = try CommandRunner.run(["retry", queue])
        #expect(all.status == 0 && all.stdout == "failed/other.jpg -> inbox/other.jpg\n")
        // Still damaged: it fails again, with a record of its own.
        #expect(eventually { files("failed") == ["other.jpg", "other.jpg.error.json"] && files("inbox").isEmpty }, "\(worker.log)")
        worker.send(SIGTERM)
        #expect(worker.waitForExit(seconds: 30) == 0)
    }
}

/// A TCP listener on loopback that answers its first request (the worker's start-up probe of the
/// bucket) with 200, then takes connections and never answers them.
final class Blackhole {
    let port: Int
    private let descriptor: Int32

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound, listen(fd, 16) == 0 else {
            close(fd)
            throw POSIXError(.EADDRNOTAVAIL)
        }
        descriptor = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        let answerer = Thread {
            let client = accept(fd, nil, nil)
            guard client >= 0 else { return }
            var request = [UInt8]()
            var byte: UInt8 = 0
            while read(client, &byte, 1) == 1 {
                request.append(byte)
                if request.suffix(4) == Array("\r\n\r\n".utf8) { break }
            }
            let answer = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            _ = answer.withCString { write(client, $0, strlen($0)) }
            close(client)
        }
        answerer.start()
    }

    deinit { close(descriptor) }

    /// Connections the kernel has completed and that wait, unanswered, in the backlog.
    var connections: Int {
        // The listener is never accepted from; ss would show them, /proc/net/tcp is enough here. Read
        // to its end: String(contentsOfFile:) stops after the first page of a /proc file, which misses
        // the listener's line once the machine has a few dozen sockets (other tests' TIME_WAITs).
        let data = (try? FileHandle(forReadingFrom: URL(fileURLWithPath: "/proc/net/tcp")).readToEnd()) ?? nil
        let table = String(decoding: data ?? Data(), as: UTF8.self)
        let local = String(format: "0100007F:%04X", port)
        return table.split(separator: "\n").filter { line in
            let fields = line.split(separator: " ")
            return fields.count > 3 && fields[1] == local && fields[3] == "01"
        }.count
    }
}

extension ISO8601DateFormatter {
    nonisolated(unsafe) static let withFractions: ISO8601DateFormatter = {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }()
}
