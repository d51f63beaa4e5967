// The one rule of what is an image, on its own and through a batch: first bytes decide, whatever the name.
import Foundation
import ImagePipe
import ImagePipeTestKit
import ImagePipeTestSupport
import Synchronization
import Testing

@Suite struct ImageSignatureTests {
    let directory = TemporaryDirectory()

    /// A JPEG's first bytes and some more: enough for the sniffer, not for a decoder.
    static let jpegHead = Data([0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10] + Array("JFIF".utf8) + [0, 1, 1, 0, 0, 1, 0, 1])

    @Test func theBytesDecideWhateverTheName() {
        let jpeg = [UInt8](Self.jpegHead), text = Array("hello, world\n".utf8)
        // An image is taken by its bytes; anything else is skipped by them, a name promising an image
        // included (issue 52 §4: the same bytes, the same fate).
        #expect(ImageSignature.skipReason(head: jpeg) == nil)
        #expect(
            ImageSignature.skipReason(head: text) == "its first bytes match no format imagepipe reads (JPEG, PNG, WebP, TIFF, GIF, HEIC, AVIF)")
        #expect(ImageSignature.skipReason(head: [UInt8]()) == "an empty file (0 bytes)")
        // A hidden-looking name has no extension.
        #expect(!ImageSignature.nameSaysImage(".jpg") && ImageSignature.nameSaysImage("a.b.webp"))
    }

    @Test func signaturesOfEveryFormatRead() {
        let riff = Array("RIFF".utf8) + [0, 0, 0, 0] + Array("WEBP".utf8)
        let cases: [([UInt8], String?)] = [
            ([0xFF, 0xD8, 0xFF, 0xDB], "jpg"), ([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A], "png"), (Array("GIF89a".utf8), "gif"),
            (riff, "webp"), ([0x49, 0x49, 0x2A, 0x00], "tif"), ([0x4D, 0x4D, 0x00, 0x2A], "tif"),
            ([0x49, 0x49, 0x2B, 0x00], "tif"), ([0, 0, 0, 0x18] + Array("ftypheic".utf8), "heic"),
            ([0, 0, 0, 0x1C] + Array("ftypavif".utf8), "avif"), ([0, 0, 0, 0x18] + Array("ftypisom".utf8), nil),
            ([0, 0, 0, 0x18] + Array("ftyphevm".utf8), "heic"), ([0, 0, 0, 0x18] + Array("ftyphevs".utf8), "heic"),
            ([0, 0, 0, 0x18] + Array("ftypmif1".utf8), "heic"), (Array("%PDF-1.7".utf8), nil), ([0xFF, 0xD8], nil),
            (Array("RIFF".utf8) + [0, 0, 0, 0] + Array("WAVE".utf8), nil),
        ]
        for (head, ext) in cases { #expect(ImageSignature.fileExtension(of: head) == ext, "\(head)") }
    }

    @Test func aBatchTakesImagesByTheirBytesAndSkipsTheRestWhateverTheirNames() async throws {
        directory.write("src/3f2a9c1e", Self.jpegHead)
        directory.write("src/upload.dat", Self.jpegHead)
        directory.write("src/notes.txt", "just some notes\n")
        directory.write("src/empty", Data())
        directory.write("src/x.jpg", "not a jpeg\n")
        directory.write("src/empty.png", Data())
        let compressor = ScriptedCompressor()
        let storage = InMemoryStorage()
        let results = Mutex<[String: JobResult]>([:])
        let summary = try await BatchRunner(
            scanner: SourceScanner(root: directory.url("src")), pipeline: JobPipeline(handler: FileHandler(compressor: compressor, storage: storage))
        ).run { result, _ in results.withLock { $0[result.source] = result } }
        let bySource = results.withLock { $0 }
        #expect(summary.done == 2 && summary.skipped == 4 && summary.failed == 0)
        #expect(bySource["3f2a9c1e"]?.status == .done && bySource["upload.dat"]?.status == .done)
        // A text file and an empty one end alike whether or not their names promise an image.
        #expect(bySource["notes.txt"]?.skipCode == .notAnImage && bySource["x.jpg"]?.skipCode == .notAnImage)
        #expect(bySource["notes.txt"]?.reason == bySource["x.jpg"]?.reason)
        #expect(bySource["empty"]?.skipCode == .notAnImage && bySource["empty.png"]?.skipCode == .notAnImage)
        #expect(bySource["empty.png"]?.reason == "an empty file (0 bytes)")
        #expect(Set(compressor.calls) == ["3f2a9c1e", "upload.dat"], "what is no image is never decoded")
    }

    /// A file named as an image whose keys clash with another's is read before it fails with the
    /// clash: one whose bytes are no image is skipped, as it is without a clash.
    @Test func aClashingFileNamedAsAnImageThatIsNoneIsSkippedNotFailed() async throws {
        directory.write("src/IMG_3.jpg", Self.jpegHead)
        directory.write("src/IMG_3.png", "an error page saved as an image\n")
        directory.write("src/IMG_4.jpg", Self.jpegHead)
        directory.write("src/IMG_4.png", Self.jpegHead)
        let storage = InMemoryStorage()
        let results = Mutex<[String: JobResult]>([:])
        let summary = try await BatchRunner(
            scanner: SourceScanner(root: directory.url("src")),
            pipeline: JobPipeline(handler: FileHandler(compressor: ScriptedCompressor(), storage: storage))
        ).run { result, _ in results.withLock { $0[result.source] = result } }
        let bySource = results.withLock { $0 }
        #expect(summary.done == 2 && summary.skipped == 1 && summary.failed == 1, "\(bySource)")
        #expect(bySource["IMG_3.png"]?.skipCode == .notAnImage, "\(String(describing: bySource["IMG_3.png"]))")
        #expect(bySource["IMG_4.png"]?.errorCode == .keyCollision && bySource["IMG_4.png"]?.error?.contains("'IMG_4.jpg'") == true)
    }

    @Test func aFileNotNamedAsAnImageTakesNoKeysFromOneThatIsAndCollidesOnlyWhenItIsAnImage() async throws {
        // IMG_1.xmp (a sidecar) shares IMG_1.jpg's keys; it is larger, so it starts first.
        directory.write("src/IMG_1.jpg", Self.jpegHead)
        directory.write("src/IMG_1.xmp", String(repeating: "<x:xmpmeta/>\n", count: 100))
        directory.write("src/IMG_2.jpg", Self.jpegHead)
        directory.write("src/IMG_2.dat", Self.jpegHead + Data(count: 1000))
        let storage = InMemoryStorage()
        let results = Mutex<[String: JobResult]>([:])
        let summary = try await BatchRunner(
            scanner: SourceScanner(root: directory.url("src")),
            pipeline: JobPipeline(handler: FileHandler(compressor: ScriptedCompressor(), storage: storage))
        ).run { result, _ in results.withLock { $0[result.source] = result } }
        let bySource = results.withLock { $0 }
        #expect(summary.done == 2 && summary.skipped == 1 && summary.failed == 1)
        #expect(bySource["IMG_1.jpg"]?.status == .done && bySource["IMG_1.xmp"]?.skipCode == .notAnImage)
        #expect(bySource["IMG_2.jpg"]?.status == .done, "the file named as an image keeps its keys")
        #expect(bySource["IMG_2.dat"]?.errorCode == .keyCollision && bySource["IMG_2.dat"]?.error?.contains("'IMG_2.jpg'") == true)
        #expect(String(decoding: storage.objects["IMG_2-large.jpg"]!.body, as: UTF8.self).hasPrefix("IMG_2.jpg"))
    }

    @Test func aLargeFileThatIsNoImageIsNotReadPastItsFirstBytes() throws {
        let path = directory.write("big.log", Data(repeating: UInt8(ascii: "a"), count: 8 << 20))
        // The bytes this thread read so far (the kernel's count, page cache included).
        func bytesRead() throws -> Int {
            let io = try String(contentsOfFile: "/proc/thread-self/io", encoding: .utf8)
            let line = try #require(io.split(separator: "\n").first { $0.hasPrefix("rchar:") })
            return try #require(Int(line.dropFirst("rchar:".count).trimmingCharacters(in: .whitespaces)))
        }
        var before = try bytesRead()
        guard case .notAnImage(let reason) = try SourceReader.read(RawPath(path), imagesOnly: true, inMemoryLimit: 1024) else {
            Issue.record("a log file was taken as an image")
            return
        }
        #expect(reason.hasPrefix("its first bytes match no format"), "the reason does not repeat its code")
        #expect(try bytesRead() - before < 4096, "only the first bytes are read")
        // Unjudged (the reader's other callers), the whole file is read.
        before = try bytesRead()
        #expect(try SourceReader.read(RawPath(path), inMemoryLimit: 1024).byteCount == 8 << 20)
        #expect(try bytesRead() - before >= 8 << 20)
    }
}
