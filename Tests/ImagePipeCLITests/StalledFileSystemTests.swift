import Foundation
import ImagePipe
import ImagePipeTestSupport
import Testing

/// A queue on a file system that is frozen under the worker (`fsfreeze`, as a snapshot tool or an
/// exploit's FIFREEZE would), on the real binary: the worker's writes to it block without an error,
/// and the worker says so in its log and on `/readyz` within a minute, instead of going quiet.
@Suite(.offThePool) struct StalledFileSystemTests {
    let directory = TemporaryDirectory(prefix: "imagepipe-stalled")

    /// An ext4 file system of its own, on a loop device, mounted in the test's folder (root only;
    /// `make test` runs as root). Frozen and thawed by the test, unmounted at the end.
    final class LoopFileSystem {
        let mountPoint: String
        private var frozen = false

        init(in directory: TemporaryDirectory) throws {
            let image = directory.url("fs.img")
            mountPoint = directory.url("mnt")
            try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
            for command in [["truncate", "-s", "64M", image], ["mkfs.ext4", "-q", image], ["mount", "-o", "loop", image, mountPoint]] {
                let run = try CommandRunner.run(executable: "/usr/bin/env", command)
                try #require(run.status == 0, "\(command.joined(separator: " ")): \(run.stderr)")
            }
        }

        func freeze() throws {
            let run = try CommandRunner.run(executable: "/usr/bin/env", ["fsfreeze", "-f", mountPoint])
            try #require(run.status == 0, "fsfreeze: \(run.stderr)")
            frozen = true
        }

        func thaw() {
            guard frozen else { return }
            _ = try? CommandRunner.run(executable: "/usr/bin/env", ["fsfreeze", "-u", mountPoint])
            frozen = false
        }

        deinit {
            thaw()
            _ = try? CommandRunner.run(executable: "/usr/bin/env", ["umount", "-l", mountPoint])
        }
    }

    @Test func aFrozenQueueFileSystemIsLoggedAndMakesTheWorkerNotReadyWithinAMinute() throws {
        try #require(getuid() == 0, "mounting and freezing a file system needs root: run the tests as root, as CI does")
        let volume = try LoopFileSystem(in: directory)
        let queue = volume.mountPoint + "/queue"
        try FileManager.default.createDirectory(atPath: queue + "/inbox", withIntermediateDirectories: true)
        let worker = try WorkerProcess(
            [
                "watch", queue, "--dest", directory.url("out"), "--jobs", "1", "--status-interval", "0", "--metrics-address", "127.0.0.1:0",
                "--check-interval", "1", "--variant", "small=200x,jpeg,q80",
            ], log: directory.url("worker.log"))
        var stopped: [pid_t] = []
        defer {
            volume.thaw()
            for helper in stopped { kill(helper, SIGCONT) }
            worker.send(SIGKILL)
        }
        let address = try #require(worker.monitoringAddress(), "\(worker.log)")
        #expect(eventually { LoopbackHTTP.get("http://\(address)/readyz").status == 200 }, "\(worker.log)")

        // The job is claimed (moved into the claim area) while the file system still takes writes,
        // and made once it is frozen: every helper that could take it is stopped until then, so that
        // settling it (its record and its move into done/) meets the frozen file system, however
        // loaded the machine.
        #expect(eventually { ImageHelpers.of(worker.process.processIdentifier).count >= 1 }, "\(worker.log)")
        // The zygote too, so that no helper is forked meanwhile that could take the job first.
        stopped = ImageHelpers.of(worker.process.processIdentifier) + [ImageHelpers.zygote(of: worker.process.processIdentifier)].compactMap { $0 }
        for helper in stopped { kill(helper, SIGSTOP) }
        InboxDelivery.deliver(Fixtures.data("images/formats/landscape.jpg"), to: queue + "/inbox", as: "photo.jpg")
        #expect(eventually(seconds: 60) { !FileManager.default.fileExists(atPath: queue + "/inbox/photo.jpg") }, "\(worker.log)")
        try volume.freeze()
        let frozenAt = Date()
        // The job's helper goes on, and its outputs are stored: settling the job meets the frozen queue.
        for helper in stopped { kill(helper, SIGCONT) }
        stopped = []

        // Not ready, naming the call, and said in the log, within a minute of the freeze.
        #expect(
            eventually(seconds: 60) {
                let answer = LoopbackHTTP.get("http://\(address)/readyz")
                return answer.status == 503 && answer.body.contains("file-systems") && answer.body.contains("has not returned")
            }, "\(LoopbackHTTP.get("http://\(address)/readyz").body)\n\(worker.log)")
        #expect(eventually(seconds: 10) { worker.log.contains("a file-system call has not returned") }, "\(worker.log)")
        #expect(Date().timeIntervalSince(frozenAt) < 70)

        // Thawed, the job is settled and the worker is ready again.
        volume.thaw()
        #expect(eventually(seconds: 120) { FileManager.default.fileExists(atPath: queue + "/done/photo.jpg.json") }, "\(worker.log)")
        #expect(eventually(seconds: 30) { LoopbackHTTP.get("http://\(address)/readyz").status == 200 }, "\(worker.log)")
        #expect(eventually(seconds: 30) { worker.log.contains("a file-system call that had stalled returned") }, "\(worker.log)")
        worker.send(SIGTERM)
        #expect(worker.waitForExit(seconds: 60) == 0, "\(worker.log)")
    }
}
