import Foundation
import ImagePipe
import ImagePipeTestKit
import Testing

@Suite struct LocalDirectoryStorageTests {
    let directory = TemporaryDirectory()

    @Test func writesNestedKeysAndReportsAFileURL() throws {
        let storage = try LocalDirectoryStorage(root: directory.url("out"))
        let stored = try storage.put(StorageObject(key: "Été 2024/a b-large.jpg", body: Data("jpeg".utf8), contentType: "image/jpeg"))
        #expect(stored.key == "Été 2024/a b-large.jpg")
        #expect(stored.bytes == 4)
        #expect(stored.url == "file://" + directory.url("out") + "/%C3%89t%C3%A9%202024/a%20b-large.jpg")
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory.url("out/Été 2024/a b-large.jpg"))) == Data("jpeg".utf8))
        #expect(directory.files(under: "out") == ["Été 2024/a b-large.jpg"], "no temporary file left behind")
    }

    @Test func replacesAnExistingObjectWhole() throws {
        let storage = try LocalDirectoryStorage(root: directory.path)
        _ = try storage.put(StorageObject(key: "k.png", body: Data(repeating: 1, count: 10_000), contentType: "image/png"))
        _ = try storage.put(StorageObject(key: "k.png", body: Data([2, 2]), contentType: "image/png"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory.url("k.png"))) == Data([2, 2]))
        #expect(directory.files() == ["k.png"])
    }

    @Test func refusesKeysOutsideTheRoot() throws {
        let storage = try LocalDirectoryStorage(root: directory.url("out"))
        for key in ["../evil.jpg", "/etc/evil.jpg", "a/../../evil.jpg"] {
            #expect(throws: ImagePipeError.self) {
                try storage.put(StorageObject(key: key, body: Data([1]), contentType: "image/jpeg"))
            }
        }
        #expect(!FileManager.default.fileExists(atPath: directory.url("evil.jpg")))
    }

    @Test func anUnwritableDestinationFailsWithAReason() throws {
        // A regular file where a directory is needed fails the same way for root and other users.
        directory.write("out/blocker", "not a directory")
        let storage = try LocalDirectoryStorage(root: directory.url("out"))
        do {
            _ = try storage.put(StorageObject(key: "blocker/x.jpg", body: Data([1]), contentType: "image/jpeg"))
            Issue.record("put under a file must fail")
        } catch {
            #expect(error.code == .storageRejected)
            #expect(error.reason.contains("blocker"))
        }
    }

    @Test func concurrentPutsOfOneKeyLeaveOneCompleteFile() throws {
        let storage = try LocalDirectoryStorage(root: directory.path)
        let bodies = (0..<8).map { Data(repeating: UInt8($0), count: 200_000) }
        DispatchQueue.concurrentPerform(iterations: 8) { index in
            _ = try? storage.put(StorageObject(key: "same.webp", body: bodies[index], contentType: "image/webp"))
        }
        let written = try Data(contentsOf: URL(fileURLWithPath: directory.url("same.webp")))
        #expect(bodies.contains(written))
        #expect(directory.files() == ["same.webp"])
    }
}
