import Foundation
import ImagePipe
import ImagePipeTestKit
import ImagePipeTestSupport
import Testing

@Suite struct FileHandlerTests {
    let directory = TemporaryDirectory()

    /// A job of a file the scripted compressor takes: an image's first bytes, then `contents`.
    func job(_ relative: String, _ contents: String = "original bytes") -> Job {
        Job(path: directory.write(relative, ScriptedCompressor.image(contents)), relativePath: relative)
    }

    @Test func storesEveryVariantUnderItsKeyAndRecordsTheResult() async throws {
        let storage = InMemoryStorage()
        let handler = FileHandler(compressor: ScriptedCompressor(), storage: storage)
        let result = try await handler.run(job("trip/IMG 1.jpg", "abc"))

        #expect(result.status == .done)
        #expect(result.error == nil)
        #expect(result.source == "trip/IMG 1.jpg")
        #expect(result.sha256 == "964dbefaad551579b528d6dcd6d448aecba5f9017e9bf4c291c257aa10389b78")
        #expect(result.bytes == 7)
        #expect(result.width == 4000 && result.height == 3000)
        #expect(result.variants.map(\.key) == ["trip/IMG 1-large.jpg", "trip/IMG 1-medium.webp", "trip/IMG 1-thumb.webp"])
        #expect(result.variants.map { "\($0.width)x\($0.height)" } == ["2048x1536", "1024x768", "320x320"])
        #expect(Set(storage.objects.keys) == Set(result.variants.map(\.key)))
        #expect(storage.objects["trip/IMG 1-thumb.webp"]?.contentType == "image/webp")
        #expect(storage.objects["trip/IMG 1-large.jpg"]?.contentType == "image/jpeg")
        #expect(result.variants.allSatisfy { $0.bytes == storage.objects[$0.key]?.body.count })
    }

    @Test func aStorageFailureFailsTheJobWithTheStorageReason() async throws {
        let storage = InMemoryStorage(failing: { object, _ in
            object.key.hasSuffix("medium.webp") ? ImagePipeError(.storageUnavailable, "bucket is on fire (503)") : nil
        })
        let result = try await FileHandler(compressor: ScriptedCompressor(), storage: storage).run(job("a.jpg"))
        #expect(result.status == .failed)
        #expect(result.variants.isEmpty)
        #expect(result.error == "storing a-medium.webp: bucket is on fire (503)")
        #expect(result.errorCode == .storageUnavailable)
        #expect(result.transient == true)
    }

    @Test func anInputFailureStoresNothing() async throws {
        let storage = InMemoryStorage()
        let compressor = ScriptedCompressor(failing: { _ in ImagePipeError(.corruptImage, "corrupt or truncated image data") })
        let result = try await FileHandler(compressor: compressor, storage: storage).run(job("bad.jpg"))
        #expect(result.status == .failed)
        #expect(result.transient == false)
        #expect(result.errorCode == .corruptImage)
        #expect(storage.putCount == 0)
        #expect(result.sha256 != nil, "the source was read before it failed to decode")
    }

    @Test func aMissingSourceFailsNamingItsAbsolutePathAndAnEmptyOneIsSkippedAsNoImage() async throws {
        let handler = FileHandler(compressor: ScriptedCompressor(), storage: InMemoryStorage())
        let missing = try await handler.run(Job(path: directory.url("gone.jpg"), relativePath: "gone.jpg"))
        #expect(missing.status == .failed && missing.errorCode == .unreadableSource)
        #expect(missing.error == "cannot read \(directory.url("gone.jpg")): No such file or directory", "\(missing.error ?? "")")
        // A relative path is tried from the working directory, and the reason says where that led.
        let relative = try await handler.run(Job(path: "no-such-dir-52/gone.jpg", relativePath: "no-such-dir-52/gone.jpg"))
        let tried = FileManager.default.currentDirectoryPath + "/no-such-dir-52/gone.jpg"
        #expect(relative.error == "cannot read \(tried): No such file or directory", "\(relative.error ?? "")")
        // An empty file has no image's first bytes, whatever it is called.
        let empty = try await handler.run(Job(path: directory.write("empty.jpg", ""), relativePath: "empty.jpg"))
        #expect(empty.status == .skipped && empty.skipCode == .notAnImage && empty.reason == "an empty file (0 bytes)")
    }

    @Test func keysThatEscapeTheDestinationFailTheJob() async throws {
        // Templates cannot escape (they are checked when parsed), but a job's own path could.
        let storage = InMemoryStorage()
        let source = directory.write("b.jpg", ScriptedCompressor.image())
        let result = try await FileHandler(compressor: ScriptedCompressor(), storage: storage)
            .run(Job(path: source, relativePath: "../../b.jpg"))
        #expect(result.errorCode == .invalidKey)
        #expect(storage.putCount == 0)
    }

    @Test func resultsEncodeAsOneJSONLine() async throws {
        let result = try await FileHandler(compressor: ScriptedCompressor(), storage: InMemoryStorage()).run(job("x.png"))
        let line = result.jsonLine()
        #expect(!line.contains("\n"))
        let decoded = try JSONDecoder().decode(JobResult.self, from: Data(line.utf8))
        #expect(decoded.jsonLine() == line, "a record reads back as it was written")
        // Timings are written to hundredths of a millisecond; everything else exactly.
        var expected = result
        expected.timings = decoded.timings
        #expect(decoded == expected)
        // Half a hundredth at most; a value exactly half-way (0.xx5) comes back 0.005 off plus the
        // binary fraction's own error (seen once: 0.0050000000000000044).
        #expect(abs(decoded.timings.totalMs - result.timings.totalMs) <= 0.005 + 1e-9)
        let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
        for field in ["source", "status", "sha256", "width", "height", "bytes", "variants", "timings"] {
            #expect(object[field] != nil, "manifest field \(field)")
        }
        let variant = (object["variants"] as! [[String: Any]])[0]
        #expect(Set(variant.keys) == ["name", "key", "url", "format", "width", "height", "bytes"])
    }
}

@Suite struct StoreOriginalTests {
    let directory = TemporaryDirectory()

    @Test func theUntouchedOriginalGoesThroughTheKeyTemplateAsVariantOriginal() async throws {
        let storage = InMemoryStorage()
        let configuration = FileHandler.Configuration(cacheControl: "public, max-age=60", storeOriginal: true)
        let path = directory.write("trip/IMG 1.JPG", ScriptedCompressor.image("the original bytes"))
        let result = try await FileHandler(compressor: ScriptedCompressor(), storage: storage, configuration: configuration)
            .run(Job(path: path, relativePath: "trip/IMG 1.JPG"))
        #expect(result.status == .done)
        #expect(result.original?.key == "trip/IMG 1-original.jpg")
        #expect(result.original?.bytes == 22)
        #expect(result.variants.count == 3, "the original is not counted as a variant")
        let stored = try #require(storage.objects["trip/IMG 1-original.jpg"])
        #expect(stored.body == ScriptedCompressor.image("the original bytes"))
        #expect(stored.cacheControl == "public, max-age=60")
        #expect(storage.objects["trip/IMG 1-large.jpg"]?.cacheControl == "public, max-age=60")
    }

    @Test func aFailedOriginalPutFailsTheJob() async throws {
        let storage = InMemoryStorage(failing: { object, _ in
            object.key == "a-original.jpg" ? ImagePipeError(.storageUnavailable, "timeout") : nil
        })
        let result = try await FileHandler(
            compressor: ScriptedCompressor(), storage: storage,
            configuration: .init(storeOriginal: true)
        )
        .run(Job(path: directory.write("a.jpg", ScriptedCompressor.image("x")), relativePath: "a.jpg"))
        #expect(result.status == .failed)
        #expect(result.original == nil && result.variants.isEmpty)
        #expect(storage.objects.isEmpty, "the variants it did store were removed again")
    }

    @Test func withAHashTemplateTheOriginalKeyIsMadeFromTheContentAndItsOwnExtension() async throws {
        let storage = InMemoryStorage()
        let configuration = FileHandler.Configuration(keyTemplate: try KeyTemplate("{hash}/{variant}.{ext}"), storeOriginal: true)
        let jpeg = Data([0xFF, 0xD8, 0xFF, 0xE0]) + Data("rest".utf8)
        let named = try await FileHandler(compressor: ScriptedCompressor(), storage: storage, configuration: configuration)
            .run(Job(path: directory.write("IMG 0001 ünïcode.JPG", jpeg), relativePath: "IMG 0001 ünïcode.JPG"))
        let hash = try #require(named.sha256?.prefix(16))
        #expect(named.original?.key == "\(hash)/original.jpg")
        // No extension in the name: the file's signature gives it.
        let bare = try await FileHandler(compressor: ScriptedCompressor(), storage: InMemoryStorage(), configuration: configuration)
            .run(Job(path: directory.write("upload-1234", jpeg), relativePath: "upload-1234"))
        #expect(bare.original?.key == "\(hash)/original.jpg")
    }
}
