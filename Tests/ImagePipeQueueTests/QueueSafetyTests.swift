import Foundation
#if canImport(Glibc)
import Glibc
#endif
import ImagePipe
import ImagePipeQueue
import ImagePipeTestKit
import Synchronization
import Testing
import ImagePipeTestSupport

/// What a queue does with odd deliveries, a full disk, empty delivery folders, a hurried stop, and
/// failed jobs sent back: in-process workers on real folders with real inotify.
@Suite struct QueueSafetyTests {
    /// Delivers by rename under a name given as bytes (a `String` cannot hold an invalid name), a
    /// file the scripted compressor takes (``ScriptedCompressor/image(_:)``).
    func deliverRaw(_ fixture: QueueFixture, _ relative: [UInt8], _ contents: String = "image bytes") {
        let hidden = fixture.queue.inbox + "/.incoming-\(UUID().uuidString)"
        try! ScriptedCompressor.image(contents).write(to: URL(fileURLWithPath: hidden))
        let target = RawPath(fixture.queue.inbox).appending(RawPath(bytes: relative))
        #expect(target.withCString { rename(hidden, $0) } == 0)
    }

    @Test func namesThatAreNotUTF8AreClaimedUnderTheirEscapedNames() async throws {
        let fixture = try QueueFixture()
        deliverRaw(fixture, Array("before".utf8) + [0xFF] + Array(".jpg".utf8), "found by the scan")
        let storage = InMemoryStorage()
        try await fixture.withWorker(storage: storage) { worker in
            // The first delivery is done: the worker watches the inbox by now.
            #expect(await eventually { fixture.files("done").count == 2 })
            try FileManager.default.createDirectory(atPath: fixture.queue.inbox + "/trip", withIntermediateDirectories: true)
            #expect(RawPath(fixture.queue.inbox + "/trip").appending(RawPath(bytes: [0xFE])).withCString { mkdir($0, 0o755) } == 0)
            deliverRaw(fixture, Array("trip/".utf8) + [0xFE] + Array("/after".utf8) + [0xC3] + Array(".png".utf8), "found by inotify")
            #expect(await eventually { fixture.files("done").count == 4 }, "\(fixture.files("inbox")) \(fixture.files("done"))")
        }
        #expect(fixture.files("done") == ["before%FF.jpg", "before%FF.jpg.json", "trip/%FE/after%C3.png", "trip/%FE/after%C3.png.json"])
        #expect(storage.objects["before%FF-large.jpg"] != nil && storage.objects["trip/%FE/after%C3-thumb.webp"] != nil)
        #expect(fixture.files("inbox").isEmpty)
        let record = try JSONDecoder().decode(
            JobResult.self, from: Data(contentsOf: URL(fileURLWithPath: fixture.queue.done + "/before%FF.jpg.json")))
        #expect(record.source == "before%FF.jpg" && record.bytes == ScriptedCompressor.image("found by the scan").count)
    }

    @Test func linksAndFIFOsFailWithoutBeingRead() async throws {
        let fixture = try QueueFixture()
        let secret = fixture.directory.write("secret/private.jpg", "secret bytes")
        let compressor = ScriptedCompressor()
        let storage = InMemoryStorage()
        symlink(secret, fixture.queue.inbox + "/early-link.jpg")
        try await fixture.withWorker(compressor: compressor, storage: storage) { _ in
            #expect(await eventually { fixture.files("failed").contains("early-link.jpg.error.json") })
            symlink(secret, fixture.queue.inbox + "/innocent.jpg")
            #expect(mkfifo(fixture.queue.inbox + "/pipe.jpg", 0o644) == 0)
            let records = ["early-link.jpg", "innocent.jpg", "pipe.jpg"].map { $0 + ".error.json" }
            #expect(await eventually { records.allSatisfy { fixture.files("failed").contains($0) } }, "\(fixture.files("failed"))")
        }
        for name in ["early-link.jpg", "innocent.jpg", "pipe.jpg"] {
            let record = try JSONDecoder().decode(
                FailureRecord.self, from: Data(contentsOf: URL(fileURLWithPath: fixture.queue.failed + "/" + name + ".error.json")))
            #expect(record.errorCode == .notARegularFile && record.attempts == 1)
            #expect(record.error.hasPrefix(name + " is a "), "\(record.error)")
        }
        #expect(compressor.calls.isEmpty && storage.putCount == 0, "the link's target was never published")
        #expect(fixture.files("processing").isEmpty && fixture.files("inbox").isEmpty)
    }

    @Test func aFullStoragePausesClaimingOnceAndResumesWhenItHasRoom() async throws {
        let fixture = try QueueFixture()
        let full = Flag(true)
        let storage = InMemoryStorage(failing: { _, _ in
            full.value ? ImagePipeError(.storageFull, "No space left on device") : nil
        })
        let compressor = ScriptedCompressor()
        let log = CapturedLog()
        var configuration = WorkerLoop.Configuration.fast
        configuration.retry = RetryPolicy(maxAttempts: 20, baseDelay: .milliseconds(50), maxDelay: .seconds(30))
        configuration.fullStoragePause = .seconds(30)
        try await fixture.withWorker(compressor: compressor, storage: storage, configuration: configuration, log: log) { worker in
            fixture.deliver("first.jpg")
            // Claiming pauses once the first job's result says the storage is full.
            #expect(await eventually { log.messages.contains { $0.contains("storage is full") } })
            for index in 0..<4 { fixture.deliver("later-\(index).jpg") }
            // The first job keeps retrying while the later ones, although the pipeline has room, wait.
            #expect(await eventually { compressor.calls.count >= 3 && worker.waiting == 4 })
            #expect(Set(compressor.calls) == ["first.jpg"])
            #expect(fixture.files("inbox").count == 4)

            full.value = false
            #expect(await eventually { fixture.files("done").count == 10 }, "\(log.messages)")
        }
        #expect(fixture.files("failed").isEmpty)
        #expect(log.messages.filter { $0.contains("storage is full") }.count == 1, "\(log.messages)")
        #expect(log.messages.contains { $0.contains("claiming resumed") })
    }

    @Test func idleEmptyDeliveryFoldersAreRemoved() async throws {
        let fixture = try QueueFixture()
        try await fixture.withWorker(directory: .init(rescanInterval: .milliseconds(200), emptyDirectoryIdle: .milliseconds(500))) { _ in
            fixture.deliver("2024/trip/a.jpg")
            #expect(await eventually { fixture.files("done").contains("2024/trip/a.jpg.json") })
            // A producer's folder with a file still being written under a hidden name is not empty.
            try FileManager.default.createDirectory(atPath: fixture.queue.inbox + "/busy", withIntermediateDirectories: true)
            try Data("partial".utf8).write(to: URL(fileURLWithPath: fixture.queue.inbox + "/busy/.upload.jpg"))
            #expect(await eventually { !FileManager.default.fileExists(atPath: fixture.queue.inbox + "/2024") })
            #expect(FileManager.default.fileExists(atPath: fixture.queue.inbox + "/busy/.upload.jpg"))
            // A folder a producer has just made survives the next rescans: it has not been idle long enough.
            try FileManager.default.createDirectory(atPath: fixture.queue.inbox + "/fresh", withIntermediateDirectories: true)
            let made = ContinuousClock.now
            let removed = await eventually(seconds: 10) { !FileManager.default.fileExists(atPath: fixture.queue.inbox + "/fresh") }
            #expect(removed && ContinuousClock.now - made >= .milliseconds(500))
        }
        #expect(FileManager.default.fileExists(atPath: fixture.queue.inbox))
    }

    @Test func stopNowCutsTheShutdownWaitShort() async throws {
        let fixture = try QueueFixture()
        let compressor = ScriptedCompressor(work: .seconds(60))
        let log = CapturedLog()
        try await fixture.withWorker(compressor: compressor, log: log) { worker in
            fixture.deliver("slow.jpg")
            #expect(await eventually { compressor.calls.count == 1 })
            worker.beginShutdown()
            #expect(await eventually { log.messages.contains { $0.contains("shutting down") } })
            #expect(worker.statistics.inFlight == 1, "the graceful stop waits for the job in flight")
            worker.loop.stopNow()
            try await worker.running.value
            #expect(compressor.runningCalls == 1, "stopped with the job still running: its work was not waited for")
            #expect(log.messages.contains("warning stopped at once: returned the jobs in flight"), "\(log.messages)")
        }
        #expect(fixture.files("inbox") == ["slow.jpg"] && fixture.files("processing").isEmpty)
    }

    @Test func retryMovesFailedJobsBackWithoutReplacingAnything() throws {
        let fixture = try QueueFixture()
        for name in ["a.jpg", "2024/trip/b.jpg", "2024/trip/c.jpg"] {
            fixture.directory.write("queue/failed/" + name, "original " + name)
            fixture.directory.write("queue/failed/" + name + ".error.json", "{}\n")
        }
        fixture.deliver("a.jpg", "a newer delivery")
        let failed = FailedJobs(queue: fixture.queue)
        #expect(failed.list() == ["2024/trip/b.jpg", "2024/trip/c.jpg", "a.jpg"])
        let (jobs, unknown) = failed.select(["a.jpg", "2024/trip/", "nothing.jpg"])
        #expect(jobs == ["a.jpg", "2024/trip/b.jpg", "2024/trip/c.jpg"] && unknown == ["nothing.jpg"])

        let outcomes = try failed.retry(["a.jpg", "2024/trip/b.jpg"])
        #expect(
            outcomes == [
                .returned(from: "failed/a.jpg", to: "inbox/a.1.jpg"),
                .returned(from: "failed/2024/trip/b.jpg", to: "inbox/2024/trip/b.jpg"),
            ])
        #expect(fixture.files("inbox") == ["2024/trip/b.jpg", "a.1.jpg", "a.jpg"])
        #expect(FileManager.default.contents(atPath: fixture.queue.inbox + "/a.jpg") == ScriptedCompressor.image("a newer delivery"))
        #expect(try String(contentsOfFile: fixture.queue.inbox + "/a.1.jpg", encoding: .utf8) == "original a.jpg")
        #expect(fixture.files("failed") == ["2024/trip/c.jpg", "2024/trip/c.jpg.error.json"], "old records removed, others untouched")
        #expect(fixture.files("processing").isEmpty)
    }
}

/// A flag shared between a test and the closures it hands out.
final class Flag: Sendable {
    private let storage: Mutex<Bool>
    init(_ value: Bool) { storage = Mutex(value) }
    var value: Bool {
        get { storage.withLock { $0 } }
        set { storage.withLock { $0 = newValue } }
    }
}
