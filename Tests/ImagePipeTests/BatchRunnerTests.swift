import Foundation
import ImagePipe
import ImagePipeTestKit
import ImagePipeTestSupport
import Synchronization
import Testing

@Suite struct BatchRunnerTests {
    let directory = TemporaryDirectory()

    @Test func scannerListsEveryFileRecursivelySkippingHiddenOnesTheDestinationAndTheManifest() throws {
        directory.write("src/b.jpg", "x")
        directory.write("src/a/c.PNG", "x")
        directory.write("src/a/deep/d.heic", "x")
        directory.write("src/.hidden.jpg", "x")
        directory.write("src/.cache/e.jpg", "x")
        directory.write("src/notes.txt", "x")
        directory.write("src/3f2a9c1e", "x")
        directory.write("src/manifest.jsonl", "{}")
        directory.write("src/out/previous-large.jpg", "x")
        let excluded = [directory.url("src/out"), directory.url("src/manifest.jsonl")]
        let scan = try SourceScanner(root: directory.url("src"), excluding: excluded).scan()
        // Names decide nothing here: every file's first bytes are judged when its job reads it.
        #expect(scan.jobs.map(\.relativePath) == ["3f2a9c1e", "a/c.PNG", "a/deep/d.heic", "b.jpg", "notes.txt"])
        #expect(scan.skipped.isEmpty)
        #expect(scan.jobs[1].path == directory.url("src/a/c.PNG"))
    }

    @Test func linksToDirectoriesDanglingLinksAndFIFOsAreReportedNotFollowed() throws {
        directory.write("src/a/real.jpg", "x")
        let manager = FileManager.default
        try manager.createSymbolicLink(atPath: directory.url("src/a/loop"), withDestinationPath: directory.url("src"))
        try manager.createSymbolicLink(atPath: directory.url("src/gone.jpg"), withDestinationPath: directory.url("nowhere.jpg"))
        try manager.createSymbolicLink(atPath: directory.url("src/alias.jpg"), withDestinationPath: directory.url("src/a/real.jpg"))
        #expect(mkfifo(directory.url("src/pipe.jpg"), 0o600) == 0)
        let scan = try SourceScanner(root: directory.url("src")).scan()
        #expect(scan.jobs.map(\.relativePath) == ["a/real.jpg", "alias.jpg"], "a link to a file is followed")
        #expect(scan.skipped.map(\.source) == ["a/loop", "gone.jpg", "pipe.jpg"])
        #expect(scan.skipped.map(\.skipCode) == [.symlinkedDirectory, .danglingLink, .notARegularFile])
        #expect(scan.skipped[1].reason == "dangling symbolic link: No such file or directory")
    }

    @Test func severalInputsKeepTheirOrderAndFilesGoByTheirName() throws {
        directory.write("b/z.jpg", "x")
        directory.write("b/y.jpg", "x")
        directory.write("a/x.png", "x")
        directory.write("c/readme.md", "x")
        let scanner = SourceScanner(inputs: [
            .init(directory.url("b")), .init(directory.url("a/x.png")),
            .init(directory.url("c/readme.md")), .init(directory.url("gone.jpg"), listed: true),
        ])
        let scan = try scanner.scan()
        #expect(scan.jobs.map(\.relativePath) == ["y.jpg", "z.jpg", "x.png", "readme.md", "gone.jpg"])
        #expect(scan.jobs[2].path == directory.url("a/x.png"))
        #expect(scan.skipped.isEmpty)
    }

    @Test func aMissingArgumentIsAConfigurationErrorNamingIt() {
        let scanner = SourceScanner(inputs: [.init(directory.url("nope")), .init(directory.url("listed-nope"), listed: true)])
        do {
            try scanner.check()
            Issue.record("a missing argument must be refused")
        } catch {
            #expect(error.code == .configuration)
            #expect(error.reason == "source \(directory.url("nope")) does not exist", "a listed path is not checked: \(error)")
        }
    }

    @Test func theSameRelativePathFromTwoInputsCollides() async throws {
        directory.write("one/x.jpg", ScriptedCompressor.image("1"))
        directory.write("two/x.jpg", ScriptedCompressor.image("2"))
        let storage = InMemoryStorage()
        let pipeline = JobPipeline(handler: FileHandler(compressor: ScriptedCompressor(), storage: storage))
        let results = Mutex<[JobResult]>([])
        let scanner = SourceScanner(inputs: [.init(directory.url("one")), .init(directory.url("two"))])
        let summary = try await BatchRunner(scanner: scanner, pipeline: pipeline).run { result, _ in results.withLock { $0.append(result) } }
        #expect(summary.done == 1 && summary.failed == 1)
        let failed = try #require(results.withLock { $0.first { $0.status == .failed } })
        #expect(failed.source == "x.jpg" && failed.errorCode == .keyCollision)
        #expect(failed.error?.contains(directory.url("one/x.jpg")) == true, "names the other file: \(failed.error ?? "")")
        #expect(String(decoding: storage.objects["x-large.jpg"]!.body, as: UTF8.self).hasPrefix("x.jpg"))
    }

    @Test func aMissingSourceIsAConfigurationError() {
        do {
            _ = try SourceScanner(root: directory.url("nope")).scan()
            Issue.record("scan of a missing directory must fail")
        } catch {
            #expect(error.code == .configuration)
        }
    }

    @Test func sourcesThatWouldOverwriteAnotherSourcesKeysFail() async throws {
        directory.write("src/a.jpg", ScriptedCompressor.image("1"))
        directory.write("src/a.png", ScriptedCompressor.image("2"))
        directory.write("src/b.jpg", ScriptedCompressor.image("3"))
        let storage = InMemoryStorage()
        let pipeline = JobPipeline(handler: FileHandler(compressor: ScriptedCompressor(), storage: storage))
        let results = Mutex<[JobResult]>([])
        let summary = try await BatchRunner(scanner: SourceScanner(root: directory.url("src")), pipeline: pipeline)
            .run { result, _ in results.withLock { $0.append(result) } }
        #expect(summary.total == 3 && summary.done == 2 && summary.failed == 1)
        let failed = results.withLock { $0.first { $0.status == .failed } }
        #expect(failed?.source == "a.png")
        #expect(failed?.errorCode == .keyCollision)
        #expect(failed?.error?.contains("'a.jpg'") == true)
        #expect(String(decoding: storage.objects["a-large.jpg"]!.body, as: UTF8.self).trimmingCharacters(in: .whitespaces) == "a.jpg:large")
    }

    @Test func anInterruptionEndsTheJobsWaitingForABatchUnrecorded() async throws {
        for index in 0..<12 { directory.write("src/\(index).jpg", ScriptedCompressor.image("image \(index)")) }
        let compressor = ScriptedCompressor(held: true, batching: CompressionBatching(sources: 8, sourceBytes: 1 << 10, totalBytes: 1 << 20))
        let pipeline = JobPipeline(handler: FileHandler(compressor: compressor, storage: InMemoryStorage()), limits: .init(jobs: 1, uploads: 1))
        let results = Mutex<[JobResult]>([])
        let running = Task {
            try await BatchRunner(scanner: SourceScanner(root: directory.url("src")), pipeline: pipeline)
                .run { result, _ in results.withLock { $0.append(result) } }
        }
        // One image in the compressor (alone, or the first of a batch), the others admitted waiting:
        // the room (3) and a batch beyond it (8), so 11 in all.
        #expect(
            await eventually(seconds: 60) {
                compressor.runningCalls == 1 && pipeline.waitingForCompression + max(1, compressor.batches.first?.count ?? 0) >= 10
            })
        running.cancel()
        for _ in 0..<12 { compressor.letOneThrough() }
        let summary = try await running.value
        #expect(summary.interrupted)
        // What the lane had taken (one image, or the first few as a batch) was finished; none of
        // those that waited was started.
        let taken = max(1, compressor.batches.first?.count ?? 0)
        #expect(compressor.batches.count <= 1 && compressor.calls.count == taken, "\(compressor.calls) in \(compressor.batches)")
        #expect(taken <= 8 && pipeline.waitingForCompression == 0)
        #expect(results.withLock { $0.count } == taken && summary.done == taken)
        #expect(pipeline.capacity.held == 0 && pipeline.capacity.working == 0)
    }

    @Test func aCallbackThatBlocksHoldsUpNewJobsInsteadOfLettingResultsPileUp() async throws {
        for index in 0..<200 { directory.write("src/\(index).jpg", ScriptedCompressor.image("x")) }
        let storage = InMemoryStorage()
        let pipeline = JobPipeline(handler: FileHandler(compressor: ScriptedCompressor(), storage: storage), limits: .init(jobs: 1, uploads: 1))
        let room = pipeline.capacity.limits.room
        let storedWhileBlocked = Mutex<Int?>(nil)
        let summary = try await BatchRunner(scanner: SourceScanner(root: directory.url("src")), pipeline: pipeline, deliveryLimit: 4)
            .run { _, _ in
                // The first callback blocks, as one waiting for a notifier whose receiver is down:
                // the batch goes on only until four results wait (and the jobs in flight finish).
                // It is let go once every job is stored, or after 3 s, whichever comes first.
                guard storedWhileBlocked.withLock({ $0 == nil }) else { return }
                let deadline = ContinuousClock.now + .seconds(3)
                while storage.objects.count < 200 * 3 && ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.01) }
                storedWhileBlocked.withLock { $0 = storage.objects.count / 3 }
            }
        #expect(summary.done == 200, "and once it returns, the rest runs")
        let stored = try #require(storedWhileBlocked.withLock { $0 })
        #expect(stored <= 4 + room, "\(stored) jobs stored while the first result waited; the bound is 4 waiting + \(room) in flight")
    }

    @Test func summaryCountsAndFormats() async throws {
        // 1000 bytes each, the image signature included.
        for index in 0..<5 { directory.write("src/\(index).jpg", ScriptedCompressor.image(String(repeating: "x", count: 996))) }
        let compressor = ScriptedCompressor(failing: { $0 == "3.jpg" ? ImagePipeError(.corruptImage, "bad") : nil })
        let pipeline = JobPipeline(handler: FileHandler(compressor: compressor, storage: InMemoryStorage()))
        directory.write("src/notes.txt", "x")
        let progress = Mutex<[BatchRunner.Progress]>([])
        let summary = try await BatchRunner(scanner: SourceScanner(root: directory.url("src")), pipeline: pipeline)
            .run { _, state in progress.withLock { $0.append(state) } }
        let states = progress.withLock { $0.sorted { $0.finished < $1.finished } }
        // notes.txt is a job too: its first byte says it is no image.
        #expect(states.map(\.finished) == [1, 2, 3, 4, 5, 6] && states.allSatisfy { $0.total == 6 })
        #expect(states.last?.failed == 1, "the failure is counted in progress")
        #expect(summary.done == 4 && summary.failed == 1 && summary.skipped == 1)
        #expect(summary.bytesIn == 5000 && summary.bytesInDone == 4000, "the failed image's bytes were read too")
        #expect(summary.lines[0].hasPrefix("4 done, 1 failed, 1 skipped (1 not_an_image) in "))
        #expect(summary.lines[1].hasPrefix("5.0 kB in (1.0 kB of it failed) → "))
        #expect(summary.lines[1].hasSuffix(String(format: "(ratio %.3f)", Double(summary.bytesOut) / 4000)))
    }

    @Test func anAllFailedBatchStillCountsWhatItRead() {
        var summary = BatchSummary()
        summary.add(JobResult(source: "a.png", status: .failed, error: ImagePipeError(.corruptImage, "bad"), bytes: 2048))
        summary.add(.skipped("b.jpg", .danglingLink, reason: "gone"))
        summary.add(.skipped("c", .notAnImage, reason: "no extension"))
        summary.add(.skipped("d", .notAnImage, reason: "no extension"))
        #expect(summary.lines[0].hasPrefix("0 done, 1 failed, 3 skipped (1 dangling_link, 2 not_an_image) in "))
        #expect(!summary.lines[0].contains("images/s"), "nothing was done: no rate")
        #expect(summary.lines[1] == "2.0 kB in (2.0 kB of it failed) → 0 B out")
    }

    @Test func aReRunThatFindsEverythingUpToDateIsOneLineAndItsRateCountsOnlyImagesDone() {
        var summary = BatchSummary()
        for name in ["a.jpg", "b.jpg"] { summary.add(.skipped(name, .upToDate, reason: "outputs in place")) }
        summary.wallTime = .seconds(2)
        #expect(summary.lines == ["0 done, 0 failed, 2 skipped (2 up_to_date) in 2.00 s"])
        // A failure found before any byte was read (a key collision) adds no line about bytes.
        summary.add(JobResult(source: "e.heic", status: .failed, error: ImagePipeError(.keyCollision, "same key"), bytes: 0))
        #expect(summary.lines == ["0 done, 1 failed, 2 skipped (2 up_to_date) in 2.00 s"], "\(summary.lines)")
        summary.add(JobResult(source: "c.png", status: .failed, error: ImagePipeError(.corruptImage, "bad"), bytes: 10))
        summary.add(JobResult(source: "d.png", status: .done, bytes: 10))
        #expect(summary.imagesPerSecond == 0.5, "one image done in 2 s; the failure is not work done")
    }

    @Test func theProgressLineShowsFailures() {
        let line = BatchRunner.Progress(finished: 12, failed: 3, total: 40, elapsed: .seconds(4)).line
        #expect(line == "[12/40] 3 failed, 3.0 images/s, ETA 0:09")
        #expect(BatchRunner.Progress(finished: 0, failed: 0, total: 7, elapsed: .zero).line == "[0/7] 0 failed, 0.0 images/s, ETA 0:00")
    }

    @Test func theLargestSourcesStartFirst() async throws {
        directory.write("src/a-small.jpg", ScriptedCompressor.image(String(repeating: "x", count: 10)))
        directory.write("src/b-large.jpg", ScriptedCompressor.image(String(repeating: "x", count: 5000)))
        directory.write("src/c-medium.jpg", ScriptedCompressor.image(String(repeating: "x", count: 800)))
        directory.write("src/d-medium.jpg", ScriptedCompressor.image(String(repeating: "x", count: 800)))
        let compressor = ScriptedCompressor()
        let pipeline = JobPipeline(
            handler: FileHandler(compressor: compressor, storage: InMemoryStorage()),
            limits: .init(jobs: 1, uploads: 1, room: 1, handedOff: 2))
        let summary = try await BatchRunner(scanner: SourceScanner(root: directory.url("src")), pipeline: pipeline).run { _, _ in }
        #expect(summary.done == 4)
        #expect(
            compressor.calls == ["b-large.jpg", "c-medium.jpg", "d-medium.jpg", "a-small.jpg"],
            "largest first; equal sizes keep path order")
    }
}
