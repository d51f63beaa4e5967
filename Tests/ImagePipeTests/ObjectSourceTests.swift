import Foundation
import ImagePipe
import ImagePipeTestKit
import Synchronization
import ImagePipeTestSupport
import Testing

/// Sources in object storage through the core's seam, with the test kit's in-memory repository:
/// scanning folders and objects, names, the size limit, failures, re-runs.
@Suite struct ObjectSourceTests {
    let sources = InMemorySources(scheme: "s3", buckets: ["media"])
    let directory = TemporaryDirectory()

    func scanner(_ inputs: [SourceScanner.Input], excluding excluded: [String] = []) -> SourceScanner {
        SourceScanner(inputs: inputs, excluding: excluded, sources: ["s3": sources])
    }

    func run(
        _ inputs: [SourceScanner.Input], storage: InMemoryStorage = InMemoryStorage(),
        configuration: FileHandler.Configuration = .init()
    ) async throws -> (BatchSummary, [String: JobResult]) {
        let handler = FileHandler(compressor: ScriptedCompressor(), storage: storage, sources: [sources], configuration: configuration)
        let results = Mutex<[String: JobResult]>([:])
        let summary = try await BatchRunner(scanner: scanner(inputs), pipeline: JobPipeline(handler: handler)).run { result, _ in
            results.withLock { $0[result.source] = result }
        }
        return (summary, results.withLock { $0 })
    }

    @Test func aFolderGoesByKeysRelativeToItFilteredLikeALocalFolder() throws {
        sources.put(Data("a".utf8), key: "photos/trip/b.jpg")
        sources.put(Data("b".utf8), key: "photos/a.PNG")
        sources.put(Data("c".utf8), key: "photos/notes.txt")
        sources.put(Data("d".utf8), key: "photos/.cache/x.jpg")
        sources.put(Data(), key: "photos/empty-folder/")
        sources.put(Data("e".utf8), key: "photos/web/a-large.jpg")
        sources.put(Data("f".utf8), key: "photography/other.jpg")

        // Without a trailing slash the URL names the folder photos/, not every key starting with "photos".
        let scan = try scanner([.init("s3://media/photos")], excluding: ["s3://media/photos/web/"]).scan()
        #expect(scan.jobs.map(\.relativePath) == ["a.PNG", "notes.txt", "trip/b.jpg"])
        #expect(scan.jobs.map(\.path) == ["s3://media/photos/a.PNG", "s3://media/photos/notes.txt", "s3://media/photos/trip/b.jpg"])
        #expect(scan.jobs.map(\.sourceName) == scan.jobs.map(\.path), "results name an object by its URL")
        #expect(scan.jobs[2].object?.bytes == 1 && scan.jobs[2].object?.etag == InMemorySources.etag(Data("a".utf8)))
        #expect(scan.skipped.isEmpty, "an object's first bytes decide when it is read, not its key")
    }

    @Test func anObjectURLIsOneSourceByItsNameAndAMissingOneIsAConfigurationError() throws {
        sources.put(Data("a".utf8), key: "photos/trip/b.jpg")
        let scan = try scanner([.init("s3://media/photos/trip/b.jpg")]).scan()
        #expect(scan.jobs.map(\.relativePath) == ["b.jpg"])

        for missing in ["s3://media/photos/nothing.jpg", "s3://other-bucket/photos/"] {
            #expect(throws: ImagePipeError.self, "\(missing)") { try scanner([.init(missing)]).scan() }
        }
        do {
            _ = try scanner([.init("s3://media/photos/nothing.jpg")]).scan()
        } catch {
            #expect(error.code == .configuration)
            #expect(
                error.reason
                    == "source s3://media/photos/nothing.jpg does not exist: no such object, and no objects under s3://media/photos/nothing.jpg/")
        }
        // An empty folder given with its slash finds nothing, like an empty directory.
        #expect(try scanner([.init("s3://media/empty/")]).scan().jobs.isEmpty)
        #expect(throws: ImagePipeError.self) { try scanner([.init("s3:///photos")]).check() }
    }

    @Test func aBatchOfObjectsAndFilesRecordsURLsETagsAndTheOriginalsOfOutputs() async throws {
        let bytes = ScriptedCompressor.image("pixels")
        sources.put(bytes, key: "in/trip/a.jpg")
        directory.write("local/b.jpg", ScriptedCompressor.image("local pixels"))
        let storage = InMemoryStorage()

        let (summary, results) = try await run([.init("s3://media/in/"), .init(directory.url("local"))], storage: storage)

        #expect(summary.done == 2 && summary.failed == 0)
        let remote = try #require(results["s3://media/in/trip/a.jpg"])
        #expect(remote.status == .done && remote.sha256 == SHA256Digest.hash(bytes).hex && remote.bytes == bytes.count)
        #expect(remote.sourceETag == InMemorySources.etag(bytes))
        #expect(remote.variants.map(\.key) == ["trip/a-large.jpg", "trip/a-medium.webp", "trip/a-thumb.webp"])
        #expect(storage.objects["trip/a-large.jpg"]?.origin?.source == "s3://media/in/trip/a.jpg")
        #expect(remote.jsonLine().contains("\"source_etag\":\"\(InMemorySources.etag(bytes))\""))
        let local = try #require(results["b.jpg"])
        #expect(local.status == .done && local.sourceETag == nil, "local files are read as before")
        #expect(!local.jsonLine().contains("source_etag"))
    }

    @Test func aSourceListedAsTooLargeIsRefusedWithoutBeingRead() async throws {
        sources.put(Data(count: 2000), key: "in/big.jpg")
        sources.put(ScriptedCompressor.image("small"), key: "in/small.jpg")
        let (summary, results) = try await run([.init("s3://media/in/")], configuration: .init(maxSourceBytes: 1000))
        #expect(summary.failed == 1 && summary.done == 1)
        let big = try #require(results["s3://media/in/big.jpg"])
        #expect(big.errorCode == .imageTooLarge && big.transient == false)
        #expect(big.error == "s3://media/in/big.jpg is 2000 bytes, more than the 1000 bytes --max-source-bytes allows; it was not downloaded")
        #expect(sources.reads.map(\.key) == ["in/small.jpg"], "the large one was never downloaded")
    }

    @Test func aListedObjectThatIsGoneOrRefusedFailsAsThatSourceAndTheRestGoOn() async throws {
        let refusing = InMemorySources(
            scheme: "s3",
            failing: { location, _ in
                location.key == "in/secret.jpg" ? ImagePipeError(.sourceForbidden, "reading \(location) is refused") : nil
            })
        refusing.put(Data("x".utf8), key: "in/secret.jpg")
        refusing.put(ScriptedCompressor.image("y"), key: "in/fine.jpg")
        let inputs = ["s3://media/in/gone.jpg", "s3://media/in/secret.jpg", "s3://media/in/fine.jpg"].map { SourceScanner.Input($0, listed: true) }
        let handler = FileHandler(compressor: ScriptedCompressor(), storage: InMemoryStorage(), sources: [refusing])
        let results = Mutex<[String: JobResult]>([:])
        let summary = try await BatchRunner(
            scanner: SourceScanner(inputs: inputs, sources: ["s3": refusing]), pipeline: JobPipeline(handler: handler)
        )
        .run { result, _ in results.withLock { $0[result.source] = result } }
        #expect(summary.done == 1 && summary.failed == 2)
        let all = results.withLock { $0 }
        #expect(all["s3://media/in/gone.jpg"]?.errorCode == .sourceNotFound)
        #expect(all["s3://media/in/secret.jpg"]?.errorCode == .sourceForbidden)
        #expect(all["s3://media/in/fine.jpg"]?.status == .done)
    }

    @Test func aReRunDownloadsEachSourceOnceToHashItAndSkipsIt() async throws {
        sources.put(ScriptedCompressor.image("one"), key: "in/a.jpg")
        sources.put(ScriptedCompressor.image("two"), key: "in/b.jpg")
        let storage = InMemoryStorage()
        _ = try await run([.init("s3://media/in")], storage: storage)
        let (summary, results) = try await run([.init("s3://media/in")], storage: storage)
        #expect(summary.skipped == 2 && summary.done == 0)
        #expect(results.values.allSatisfy { $0.skipCode == .upToDate && $0.sourceETag != nil })
        #expect(sources.reads.map(\.key).sorted() == ["in/a.jpg", "in/a.jpg", "in/b.jpg", "in/b.jpg"])
    }

    @Test func theErrorCodesHaveStableNamesAndArePermanent() {
        #expect(ImagePipeError.Code(rawValue: "source_not_found") == .sourceNotFound)
        #expect(ImagePipeError.Code(rawValue: "source_forbidden") == .sourceForbidden)
        #expect(!ImagePipeError.Code.sourceNotFound.isTransient && !ImagePipeError.Code.sourceForbidden.isTransient)
    }
}
