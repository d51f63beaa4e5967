import Foundation
import ImagePipe
import ImagePipeTestKit
import Synchronization
import Testing

@Suite struct BatchRunnerTests {
    let directory = TemporaryDirectory()

    @Test func scannerFindsImagesRecursivelySkippingHiddenAndOtherFiles() throws {
        directory.write("src/b.jpg", "x")
        directory.write("src/a/c.PNG", "x")
        directory.write("src/a/deep/d.heic", "x")
        directory.write("src/.hidden.jpg", "x")
        directory.write("src/.cache/e.jpg", "x")
        directory.write("src/notes.txt", "x")
        directory.write("src/out/previous-large.jpg", "x")
        let scan = try SourceScanner(root: directory.url("src"), excluding: [directory.url("src/out")]).scan()
        #expect(scan.jobs.map(\.relativePath) == ["a/c.PNG", "a/deep/d.heic", "b.jpg"])
        #expect(scan.skipped == ["notes.txt"])
        #expect(scan.jobs[0].path == directory.url("src/a/c.PNG"))
    }

    @Test func aMissingSourceIsAConfigurationError() {
        do {
            _ = try SourceScanner(root: directory.url("nope")).scan()
            Issue.record("scan of a missing directory must fail")
        } catch {
            #expect(error.code == .configuration)
        }
    }

    @Test func sourcesThatWouldOverwriteAnotherSourcesKeysFail() throws {
        directory.write("src/a.jpg", "1")
        directory.write("src/a.png", "2")
        directory.write("src/b.jpg", "3")
        let storage = InMemoryStorage()
        let pipeline = JobPipeline(handler: FileHandler(compressor: ScriptedCompressor(), storage: storage))
        let results = Mutex<[JobResult]>([])
        let summary = try BatchRunner(scanner: SourceScanner(root: directory.url("src")), pipeline: pipeline)
            .run { result, _ in results.withLock { $0.append(result) } }
        #expect(summary.total == 3 && summary.done == 2 && summary.failed == 1)
        let failed = results.withLock { $0.first { $0.status == .failed } }
        #expect(failed?.source == "a.png")
        #expect(failed?.errorCode == .keyCollision)
        #expect(failed?.error?.contains("'a.jpg'") == true)
        #expect(String(decoding: storage.objects["a-large.jpg"]!.body, as: UTF8.self).trimmingCharacters(in: .whitespaces) == "a.jpg:large")
    }

    @Test func summaryCountsAndFormats() throws {
        for index in 0..<5 { directory.write("src/\(index).jpg", String(repeating: "x", count: 1000)) }
        let compressor = ScriptedCompressor(failing: { $0 == "3.jpg" ? ImagePipeError(.corruptImage, "bad") : nil })
        let pipeline = JobPipeline(handler: FileHandler(compressor: compressor, storage: InMemoryStorage()))
        let progress = Mutex<[Int]>([])
        let summary = try BatchRunner(scanner: SourceScanner(root: directory.url("src")), pipeline: pipeline)
            .run { _, state in progress.withLock { $0.append(state.finished) } }
        #expect(progress.withLock { $0.sorted() } == [1, 2, 3, 4, 5])
        #expect(summary.done == 4 && summary.failed == 1 && summary.bytesIn == 4000)
        #expect(summary.lines[0].hasPrefix("4 done, 1 failed in "))
        #expect(summary.lines[1].hasPrefix("4.0 kB in → "))
    }
}
