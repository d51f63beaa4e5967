import Foundation
#if canImport(Glibc)
import Glibc
#endif
import ImagePipe
import ImagePipeQueue
import ImagePipeTestKit
import ImagePipeVips
import Testing

/// `imagepipe watch` end to end: the real binary, real inotify, real signals and `kill -9`.
@Suite(.serialized) struct WatchCommandTests {
    let directory = TemporaryDirectory(prefix: "imagepipe-watch")
    var queue: String { directory.url("queue") }

    func start(_ extra: [String] = [], log: String) throws -> WorkerProcess {
        try WorkerProcess(["watch", queue, "--dest", directory.url("out"), "--jobs", "1", "--rescan-interval", "1",
                           "--status-interval", "0"] + extra, log: directory.url(log))
    }

    /// Delivers a fixture the safe way: copied under a hidden name, then renamed into the inbox.
    func deliver(_ fixture: String, as name: String) {
        let target = queue + "/inbox/" + name
        try! FileManager.default.createDirectory(atPath: (target as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let hidden = queue + "/inbox/.incoming-\(UUID().uuidString)"
        try! Data(contentsOf: URL(fileURLWithPath: CommandRunner.fixtures + "/" + fixture)).write(to: URL(fileURLWithPath: hidden))
        rename(hidden, target)
    }

    func files(_ sub: String) -> [String] { directory.files(under: "queue/" + sub).filter { !$0.hasSuffix("/.lock") && $0 != ".lock" } }

    func record(_ name: String) throws -> JobResult {
        try JSONDecoder().decode(JobResult.self, from: Data(contentsOf: URL(fileURLWithPath: queue + "/done/" + name + ".json")))
    }

    @Test func renamedNestedAndSlowlyWrittenDeliveriesAreProcessedWhole() throws {
        try FileManager.default.createDirectory(atPath: queue + "/inbox", withIntermediateDirectories: true)
        let worker = try start(log: "worker.log")
        #expect(worker.waitForLog("watching"))

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
        Thread.sleep(forTimeInterval: 1.5)
        write(whole.dropFirst(whole.count / 3).prefix(whole.count / 3))
        Thread.sleep(forTimeInterval: 1.5)
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

    @Test(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"),
                   "needs root to run the worker as another user"))
    func anotherUsersSlowWriterIsWaitedFor() throws {
        // The worker runs as nobody; the producer (this process, root) writes straight into the inbox.
        // Without CAP_LEASE the worker can neither take a lease on root's file nor read root's /proc.
        chmod(directory.path, 0o777)
        for folder in [queue, directory.url("out")] {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            chmod(folder, 0o777)
        }
        let worker = try WorkerProcess(["watch", queue, "--dest", directory.url("out"), "--jobs", "1", "--rescan-interval", "0.2",
                                        "--status-interval", "0", "--quiet-period", "2"],
                                       log: directory.url("nobody.log"), asNobody: true)
        #expect(worker.waitForLog("watching"), "\(worker.log)")

        let whole = try Data(contentsOf: URL(fileURLWithPath: CommandRunner.fixtures + "/images/formats/landscape.jpg"))
        let path = queue + "/inbox/slow.jpg"
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o644)
        #expect(fd >= 0)
        func write(_ part: Data) { part.withUnsafeBytes { _ = Glibc.write(fd, $0.baseAddress, $0.count) } }
        for third in 0..<3 {
            write(whole.dropFirst(third * (whole.count / 3)).prefix(third == 2 ? whole.count : whole.count / 3))
            if third < 2 { Thread.sleep(forTimeInterval: 1.2) }
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
        let good = ["images/formats/landscape.jpg", "images/formats/small-400x300.jpg", "images/formats/alpha.png",
                    "images/formats/landscape-heic.heic", "images/exif-orientation/Landscape_6.jpg"]
        var names: [String: Bool] = [:]
        for index in 0..<30 {
            let fixture = good[index % good.count]
            let name = "burst/\(index)-\((fixture as NSString).lastPathComponent)"
            deliver(fixture, as: name)
            names[name] = true
        }
        deliver("hostile/truncated.jpg", as: "burst/broken.jpg")
        deliver("hostile/text.jpg", as: "burst/text.jpg")
        names["burst/broken.jpg"] = false
        names["burst/text.jpg"] = false

        let first = try start(log: "first.log")
        #expect(eventually { files("done").count >= 6 })
        first.send(SIGKILL)
        #expect(first.waitForExit(seconds: 10) == 137)
        let leftBehind = files("processing").filter { !($0 as NSString).lastPathComponent.hasPrefix(".") }.count
        let second = try start(log: "second.log"), third = try start(log: "third.log")
        #expect(eventually { files("inbox").isEmpty && files("processing").isEmpty && files("done").count + files("failed").count == 2 * names.count },
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
        // Reprocessing after the crash wrote the same keys again, never a second set of outputs.
        #expect(directory.files(under: "out").count == 3 * names.values.filter { $0 }.count)
        let failure = try JSONDecoder().decode(FailureRecord.self, from: Data(contentsOf: URL(fileURLWithPath: queue + "/failed/burst/broken.jpg.error.json")))
        #expect(failure.errorCode == .corruptImage && failure.attempts == 1)
        #expect(leftBehind > 0, "the killed worker held claimed jobs")
        #expect((second.log + third.log).contains("recovered"), "its jobs were returned to the inbox")
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
            #expect(worker.waitForLog("claimed \(name)"))
            guard let line = worker.log.split(separator: "\n").first(where: { $0.hasSuffix("claimed \(name)") }),
                  let claimed = ISO8601DateFormatter.withFractions.date(from: String(line.prefix(24))) else { continue }
            latencies.append(claimed.timeIntervalSince(delivered) * 1000)
            #expect(eventually { files("done").contains(name + ".json") })
        }
        worker.send(SIGTERM)
        #expect(worker.waitForExit(seconds: 30) == 0)
        #expect(latencies.count == 10)
        let sorted = latencies.sorted()
        // Reported, not asserted: shared machines make timings noisy.
        print("pickup latency over \(sorted.count) deliveries: median \(String(format: "%.1f", sorted[sorted.count / 2])) ms, max \(String(format: "%.1f", sorted.last ?? 0)) ms")
    }
}

extension ISO8601DateFormatter {
    nonisolated(unsafe) static let withFractions: ISO8601DateFormatter = {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }()
}
