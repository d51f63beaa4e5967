// `imagepipe watch DIR --exit-when-empty` when another worker dies holding a job: the real binary, real signals.
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import ImagePipeTestSupport
import Testing

/// A queue directory worked off by a worker that must not call it empty while a dead worker's claim area holds a job.
@Suite(.offThePool) struct DirectoryBacklogTests {
    let directory = TemporaryDirectory(prefix: "imagepipe-backlog")
    var queue: String { directory.url("queue") }

    func start(_ extra: [String], log: String) throws -> WorkerProcess {
        try WorkerProcess(
            [
                "watch", queue, "--dest", directory.url("out"), "--jobs", "1", "--status-interval", "0",
                "--variant", "a=1800x1800,avif,q60",
            ] + extra, log: directory.url(log))
    }

    func deliver(_ fixture: String, as name: String) {
        InboxDelivery.deliver(Fixtures.data(fixture), to: queue + "/inbox", as: name)
    }

    func files(_ sub: String) -> [String] { directory.files(under: "queue/" + sub).filter { !$0.hasSuffix(".lock") } }

    @Test func aWorkerWorkingOffTheBacklogTakesBackTheJobOfAWorkerThatDiedAndDoesIt() throws {
        try FileManager.default.createDirectory(atPath: queue + "/inbox", withIntermediateDirectories: true)
        let dying = try start([], log: "dying.log")
        #expect(dying.waitForLog("watching"), "\(dying.log)")
        deliver("images/exif-orientation/Landscape_1.jpg", as: "big.jpg")
        #expect(eventually { files("processing").count == 1 && files("inbox").isEmpty }, "\(dying.log)")
        // Held still (it claims nothing more), then killed while the other worker is busy: its job
        // is left in its claim area, whose lock dies with it.
        dying.send(SIGSTOP)
        deliver("images/formats/landscape.jpg", as: "own.jpg")
        // The safety-net rescan, which would also put the dead worker's job back, is far away.
        let survivor = try start(["--exit-when-empty", "--rescan-interval", "300"], log: "survivor.log")
        #expect(eventually { files("inbox").isEmpty }, "\(survivor.log)")
        dying.send(SIGKILL)
        #expect(dying.waitForExit(seconds: 10) == 128 + SIGKILL)
        #expect(survivor.waitForExit(seconds: 120) == 0, "\(survivor.log)")
        let done = Set(files("done"))
        #expect(done.isSuperset(of: ["big.jpg", "big.jpg.json", "own.jpg", "own.jpg.json"]), "nothing left undone: \(done) \(survivor.log)")
        #expect(files("processing").isEmpty && files("inbox").isEmpty, "\(files("processing"))")
        #expect(survivor.log.contains("recovered jobs left by a worker that died"), "\(survivor.log)")
    }
}
