// The one rule of what is an image, on its own and through a batch: first bytes decide, names only promise.
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

    @Test func theBytesDecideAndANameOnlyPromises() {
        let jpeg = [UInt8](Self.jpegHead), text = Array("hello, world\n".utf8)
        // An image under any name is taken.
        for name in ["3f2a9c1e", "upload.dat", "x.txt", "a/b/photo.jpg"] {
            #expect(ImageSignature.skipReason(head: jpeg, name: name) == nil, "\(name)")
        }
        // Anything else is skipped, unless its name says it is an image: that one is decoded and fails.
        for name in ["notes.txt", "3f2a9c1e", "archive.tar.gz", "dir.jpg/readme"] {
            #expect(
                ImageSignature.skipReason(head: text, name: name)
                    == "not an image: its first bytes match no format imagepipe reads (JPEG, PNG, WebP, TIFF, GIF, HEIC, AVIF)",
                "\(name)")
        }
        for name in ["x.jpg", "X.JPEG", "a/b.heic", "scan.TIF"] {
            #expect(ImageSignature.skipReason(head: text, name: name) == nil, "\(name)")
        }
        #expect(ImageSignature.skipReason(head: [UInt8](), name: "empty") == "not an image: an empty file")
        #expect(ImageSignature.skipReason(head: [UInt8](), name: "empty.png") == nil, "fails as empty_file, as before")
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
            (Array("%PDF-1.7".utf8), nil), ([0xFF, 0xD8], nil), (Array("RIFF".utf8) + [0, 0, 0, 0] + Array("WAVE".utf8), nil),
        ]
        for (head, ext) in cases { #expect(ImageSignature.fileExtension(of: head) == ext, "\(head)") }
    }

    @Test func aBatchTakesImagesByTheirBytesSkipsTheRestAndFailsWhatIsNamedAsAnImage() async throws {
        directory.write("src/3f2a9c1e", Self.jpegHead)
        directory.write("src/upload.dat", Self.jpegHead)
        directory.write("src/notes.txt", "just some notes\n")
        directory.write("src/empty", Data())
        directory.write("src/x.jpg", "not a jpeg\n")
        let compressor = ScriptedCompressor(failing: {
            $0 == "x.jpg" ? ImagePipeError(.unsupportedFormat, "not a recognised image format") : nil
        })
        let storage = InMemoryStorage()
        let results = Mutex<[String: JobResult]>([:])
        let summary = try await BatchRunner(
            scanner: SourceScanner(root: directory.url("src")), pipeline: JobPipeline(handler: FileHandler(compressor: compressor, storage: storage))
        ).run { result, _ in results.withLock { $0[result.source] = result } }
        let bySource = results.withLock { $0 }
        #expect(summary.done == 2 && summary.skipped == 2 && summary.failed == 1)
        #expect(bySource["3f2a9c1e"]?.status == .done && bySource["upload.dat"]?.status == .done)
        #expect(bySource["notes.txt"]?.skipCode == .notAnImage && bySource["empty"]?.skipCode == .notAnImage)
        #expect(bySource["x.jpg"]?.errorCode == .unsupportedFormat)
        #expect(Set(compressor.calls) == ["3f2a9c1e", "upload.dat", "x.jpg"], "what is no image is never decoded")
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
        guard case .notAnImage(let reason) = try SourceReader.read(RawPath(path), named: "big.log", inMemoryLimit: 1024) else {
            Issue.record("a log file was taken as an image")
            return
        }
        #expect(reason.hasPrefix("not an image"))
        #expect(try bytesRead() - before < 4096, "only the first bytes are read")
        // Without a name nothing is judged (the reader's other callers), and the whole file is read.
        before = try bytesRead()
        #expect(try SourceReader.read(RawPath(path), inMemoryLimit: 1024).byteCount == 8 << 20)
        #expect(try bytesRead() - before >= 8 << 20)
    }
}
