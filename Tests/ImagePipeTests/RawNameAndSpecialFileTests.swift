import Foundation
#if canImport(Glibc)
import Glibc
#endif
import ImagePipe
import ImagePipeTestKit
import ImagePipeTestSupport
import Synchronization
import Testing

/// Names that are not valid UTF-8, symbolic links and special files, on a real file system.
@Suite struct RawNameAndSpecialFileTests {
    let directory = TemporaryDirectory()

    /// Writes a file the scripted compressor takes (an image's first bytes, then `text`) at a path
    /// given as bytes (a `String` cannot hold an invalid name).
    func write(_ path: [UInt8], _ text: String) {
        let contents = [UInt8](ScriptedCompressor.image(text))
        let fd = RawPath(bytes: Array(directory.path.utf8) + [UInt8(ascii: "/")] + path).withCString {
            open($0, O_WRONLY | O_CREAT | O_EXCL, 0o644)
        }
        #expect(fd >= 0)
        _ = Glibc.write(fd, contents, contents.count)
        close(fd)
    }

    func mkdirRaw(_ path: [UInt8]) {
        _ = RawPath(bytes: Array(directory.path.utf8) + [UInt8(ascii: "/")] + path).withCString { mkdir($0, 0o755) }
    }

    @Test func invalidBytesAreEscapedAndValidTextIsKept() {
        #expect(RawPath.escape(Array("été 東京.jpg".utf8)) == "été 東京.jpg")
        #expect(RawPath.escape([0x61, 0xFF, 0x62]) == "a%FFb")
        // A sequence cut short, and a lone continuation byte.
        #expect(RawPath.escape([0xE2, 0x82, 0x2E, 0x80]) == "%E2%82.%80")
        #expect(RawPath(bytes: [0x61, 0xFF]).isValidUTF8 == false && RawPath("a").isValidUTF8)
    }

    @Test func aBatchFindsAndProcessesNamesThatAreNotUTF8() async throws {
        mkdirRaw(Array("src".utf8))
        write(Array("src/ok.jpg".utf8), "fine")
        write(Array("src/bad".utf8) + [0xFF] + Array(".jpg".utf8), "raw name")
        mkdirRaw(Array("src/dir".utf8) + [0xFE])
        write(Array("src/dir".utf8) + [0xFE] + Array("/inner.png".utf8), "raw folder")

        let scan = try SourceScanner(root: directory.url("src")).scan()
        #expect(scan.jobs.map(\.relativePath) == ["bad%FF.jpg", "dir%FE/inner.png", "ok.jpg"])
        #expect(scan.jobs.map { $0.rawPath == nil } == [false, false, true])

        let storage = InMemoryStorage()
        let results = Mutex<[JobResult]>([])
        let summary = try await BatchRunner(
            scanner: SourceScanner(root: directory.url("src")),
            pipeline: JobPipeline(handler: FileHandler(compressor: ScriptedCompressor(), storage: storage))
        )
        .run { result, _ in results.withLock { $0.append(result) } }
        #expect(summary.total == 3 && summary.done == 3, "\(results.withLock { $0 })")
        #expect(storage.objects["bad%FF-large.jpg"] != nil)
        #expect(storage.objects["dir%FE/inner-thumb.webp"] != nil)
        let raw = results.withLock { $0.first { $0.source == "bad%FF.jpg" } }
        #expect(raw?.bytes == ScriptedCompressor.image("raw name").count, "the file itself was read, by its raw name")
    }

    @Test func linksAreFollowedOnlyWhenAsked() throws {
        let target = directory.write("secret/private.jpg", "secret bytes")
        symlink(target, directory.url("innocent.jpg"))
        let link = RawPath(directory.url("innocent.jpg"))
        #expect(try SourceReader.read(link, followingLinks: true).byteCount == "secret bytes".utf8.count)
        do {
            _ = try SourceReader.read(link, followingLinks: false)
            Issue.record("a link must be refused when links are not followed")
        } catch {
            #expect(error.code == .notARegularFile)
            #expect(error.reason.contains("innocent.jpg") && error.reason.contains("symbolic link"))
        }
    }

    @Test(arguments: [true, false])
    func aFIFOIsRefusedWithoutBlocking(followingLinks: Bool) throws {
        let fifo = directory.url("pipe-\(followingLinks).jpg")
        #expect(mkfifo(fifo, 0o644) == 0)
        // Nobody ever writes to it: an open that waited for a writer would never return.
        let started = ContinuousClock.now
        do {
            _ = try SourceReader.read(RawPath(fifo), followingLinks: followingLinks)
            Issue.record("a FIFO must be refused")
        } catch {
            #expect(error.code == .notARegularFile)
            #expect(error.reason == "pipe-\(followingLinks).jpg is a FIFO, not a regular file")
        }
        #expect(ContinuousClock.now - started < .seconds(5))
    }
}
