// Large sources decoded through the descriptor that hashed them: same outputs, no bytes held, changes caught.
import Foundation
import ImagePipe
import ImagePipeTestKit
import ImagePipeTestSupport
import ImagePipeVips
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite struct OpenedSourceTests {
    let directory = TemporaryDirectory()

    /// A handler on real libvips that keeps every source over 16 KB open instead of in memory.
    func handler(_ storage: InMemoryStorage = InMemoryStorage(), storeOriginal: Bool = false) -> FileHandler {
        FileHandler(
            compressor: Fixtures.compressor, storage: storage,
            configuration: FileHandler.Configuration(inMemoryLimit: 16 << 10, storeOriginal: storeOriginal))
    }

    func copy(_ fixture: String, to name: String) -> Job {
        Job(path: directory.write(name, Fixtures.data(fixture)), relativePath: name)
    }

    @Test func aLargeSourceIsKeptOpenAndMakesTheOutputsItsBytesMake() throws {
        let job = copy("images/formats/landscape.jpg", to: "landscape.jpg")
        var inspected = JobContext(job: job)
        handler().inspect(&inspected, reserving: false)
        guard case .file(let opened) = inspected.source?.content else {
            Issue.record("a source over the limit must be kept open, not read into memory")
            return
        }
        #expect(opened.decoderPath == "/proc/self/fd/\(opened.descriptor)")
        #expect(inspected.source?.sha256 == SHA256Digest.hash(Fixtures.data("images/formats/landscape.jpg")).hex)

        var prepared = inspected
        handler().compress(&prepared)
        #expect(prepared.failure == nil)
        let fromBytes = try Fixtures.compress("images/formats/landscape.jpg")
        #expect(prepared.outputs.map(\.object?.body) == fromBytes.variants.map(\.data))
        #expect(prepared.placeholder == fromBytes.placeholder)
    }

    @Test func theDecoderReadsTheFileThatWasHashedEvenAfterItsNameIsReplaced() throws {
        let job = copy("images/formats/landscape.jpg", to: "photo.jpg")
        var inspected = JobContext(job: job)
        handler().inspect(&inspected, reserving: false)
        // Another image takes the name between inspection and compression (a re-delivery, a sync tool).
        let other = directory.write("other.jpg", Fixtures.data("images/formats/tall.jpg"))
        #expect(rename(other, job.path) == 0)

        var prepared = inspected
        handler().compress(&prepared)
        #expect(prepared.failure == nil)
        let landscape = try Fixtures.compress("images/formats/landscape.jpg")
        #expect(prepared.size == landscape.sourceSize)
        #expect(prepared.outputs.map(\.object?.body) == landscape.variants.map(\.data))
    }

    @Test func aSourceWrittenToAfterItWasHashedFailsAndStoresNothing() async throws {
        let storage = InMemoryStorage()
        let job = copy("images/formats/landscape.jpg", to: "growing.jpg")
        let handler = handler(storage)
        var inspected = JobContext(job: job)
        handler.inspect(&inspected, reserving: false)
        let file = try #require(FileHandle(forWritingAtPath: job.path))
        try file.seekToEnd()
        try file.write(contentsOf: Data("more".utf8))
        try file.close()

        var prepared = inspected
        handler.compress(&prepared)
        #expect(prepared.failure?.code == .sourceChanged)
        #expect(prepared.failure?.isTransient == true, "a queue tries it again")
        #expect(prepared.failure?.reason.contains("changed while it was being processed") == true)
        #expect(prepared.outputs.allSatisfy { $0.object == nil }, "nothing made to store")
        let result = try await handler.run(Job(path: job.path, relativePath: "growing.jpg"))
        #expect(result.status == .done, "run again, the file is read as it is now")
        #expect(storage.objects.count == 3)
    }

    @Test func aSourceRewrittenInPlaceAtTheSameSizeFailsToo() throws {
        let job = copy("images/formats/landscape.jpg", to: "touched.jpg")
        let handler = handler()
        var inspected = JobContext(job: job)
        handler.inspect(&inspected, reserving: false)
        // Same bytes count, new modification time: what an editor saving in place leaves.
        var times = [timespec(tv_sec: 1_000_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000_000, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, job.path, &times, 0) == 0)
        handler.compress(&inspected)
        #expect(inspected.failure?.code == .sourceChanged)
    }

    @Test func theStoredOriginalIsReadAgainThroughTheDescriptor() throws {
        let storage = InMemoryStorage()
        let handler = handler(storage, storeOriginal: true)
        let job = copy("images/formats/landscape.jpg", to: "keep.jpg")
        var prepared = JobContext(job: job)
        handler.inspect(&prepared, reserving: false)
        let other = directory.write("other.jpg", Fixtures.data("images/formats/tall.jpg"))
        #expect(rename(other, job.path) == 0)

        handler.compress(&prepared)
        #expect(prepared.failure == nil)
        let original = try #require(prepared.outputs.first { $0.spec == nil })
        #expect(original.object?.body == Fixtures.data("images/formats/landscape.jpg"))
    }

    @Test(arguments: ["images/formats/landscape-webp.webp", "images/formats/animated.gif"])
    func webPAndGIFAreReadWholeBecauseTheirDecodersMapTheFile(fixture: String) throws {
        let path = directory.write("source", Fixtures.data(fixture))
        let source = try SourceReader.read(RawPath(path), inMemoryLimit: 1024)
        guard case .bytes(let data) = source.content else {
            Issue.record("\(fixture) must be read whole: libvips maps WebP and GIF files, and a file cut short under a mapping kills the process")
            return
        }
        #expect(data == Fixtures.data(fixture))
    }

    @Test func theDescriptorIsClosedWhenTheLastJobValueHoldingItGoesAway() throws {
        let path = directory.write("closing.jpg", Fixtures.data("images/formats/landscape.jpg"))
        let entry = try { () throws -> String? in
            let source = try SourceReader.read(RawPath(path), inMemoryLimit: 1024)
            guard case .file(let opened) = source.content else { return nil }
            #expect(Self.target(of: opened.decoderPath) == path)
            return opened.decoderPath
        }()
        let closed = try #require(entry, "expected an open source")
        // The number may have been reused by another test's file meanwhile, but not for this one.
        #expect(Self.target(of: closed) != path)
    }

    static func target(of link: String) -> String? {
        try? FileManager.default.destinationOfSymbolicLink(atPath: link)
    }
}
