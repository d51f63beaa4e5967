import Foundation
@testable import ImagePipe
@testable import ImagePipeLocalStorage
import ImagePipeTestSupport
import Synchronization
import Testing

@Suite struct LocalDirectoryStorageTests {
    let directory = TemporaryDirectory()

    @Test func writesNestedKeysAndReportsAFileURL() throws {
        let storage = LocalDirectoryStorage(root: directory.url("out"))
        let stored = try storage.put(StorageObject(key: "Été 2024/a b-large.jpg", body: Data("jpeg".utf8), contentType: "image/jpeg"))
        #expect(stored.key == "Été 2024/a b-large.jpg")
        #expect(stored.bytes == 4)
        #expect(stored.url == "file://" + directory.url("out") + "/%C3%89t%C3%A9%202024/a%20b-large.jpg")
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory.url("out/Été 2024/a b-large.jpg"))) == Data("jpeg".utf8))
        #expect(directory.files(under: "out") == ["Été 2024/a b-large.jpg"], "no temporary file left behind")
    }

    @Test func replacesAnExistingObjectWhole() throws {
        let storage = LocalDirectoryStorage(root: directory.path)
        _ = try storage.put(StorageObject(key: "k.png", body: Data(repeating: 1, count: 10_000), contentType: "image/png"))
        _ = try storage.put(StorageObject(key: "k.png", body: Data([2, 2]), contentType: "image/png"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory.url("k.png"))) == Data([2, 2]))
        #expect(directory.files() == ["k.png"])
    }

    @Test func refusesKeysOutsideTheRoot() throws {
        let storage = LocalDirectoryStorage(root: directory.url("out"))
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
        let storage = LocalDirectoryStorage(root: directory.url("out"))
        do {
            _ = try storage.put(StorageObject(key: "blocker/x.jpg", body: Data([1]), contentType: "image/jpeg"))
            Issue.record("put under a file must fail")
        } catch {
            #expect(error.code == .storageRejected)
            #expect(error.reason.contains("blocker"))
        }
    }

    @Test func concurrentPutsOfOneKeyLeaveOneCompleteFile() throws {
        let storage = LocalDirectoryStorage(root: directory.path)
        let bodies = (0..<8).map { Data(repeating: UInt8($0), count: 200_000) }
        DispatchQueue.concurrentPerform(iterations: 8) { index in
            _ = try? storage.put(StorageObject(key: "same.webp", body: bodies[index], contentType: "image/webp"))
        }
        let written = try Data(contentsOf: URL(fileURLWithPath: directory.url("same.webp")))
        #expect(bodies.contains(written))
        #expect(directory.files() == ["same.webp"])
    }

    @Test func aPutIsReportedOnlyOnceItsFileIsInPlaceAndPutsShareRounds() throws {
        let storage = LocalDirectoryStorage(root: directory.url("out"))
        let reports = Mutex<[String: Bool]>([:])
        let done = DispatchGroup()
        // Several threads at once, as the pipeline's upload queue calls it: rounds then cover several puts.
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            for index in 0..<40 {
                let key = "d\(index % 5)/t\(thread)-\(index).jpg"
                let body = Data(repeating: UInt8(index), count: 3_000 + index)
                done.enter()
                storage.put(object(key, "", from: "\(key).src", sha: "a", body: body)) { outcome in
                    // The report comes when the file is complete under its final name, origin and all.
                    let path = directory.url("out/" + key)
                    let inPlace =
                        (try? outcome.get())?.bytes == body.count
                        && (try? Data(contentsOf: URL(fileURLWithPath: path))) == body
                        && LocalDirectoryStorage.origin(atPath: path)?.source == "\(key).src"
                    reports.withLock { $0[key] = inPlace }
                    done.leave()
                }
            }
        }
        #expect(done.wait(timeout: .now() + 60) == .success)
        let seen = reports.withLock { $0 }
        #expect(seen.count == 320)
        #expect(seen.values.allSatisfy { $0 }, "every put reported stored found its file in place")
        #expect(directory.files(under: "out").count == 320, "no temporary file left behind")
        #expect(storage.commitRounds < 320, "puts waiting together shared a round (\(storage.commitRounds) rounds)")
    }

    @Test func theFirstPutIntoADirectoryRemovesTemporaryFilesKilledRunsLeftThere() throws {
        let storage = LocalDirectoryStorage(root: directory.url("out"))
        let anHourAgo = Date().addingTimeInterval(-TemporarySweeper.staleAfter - 60)
        func file(_ name: String, written: Date) {
            let path = directory.write("out/a/" + name, "bytes")
            try? FileManager.default.setAttributes([.modificationDate: written], ofItemAtPath: path)
        }
        file(".imagepipe-4242abc-7.tmp", written: anHourAgo)
        file(".imagepipe-4242abc-8.tmp", written: Date())
        file(".imagepipe-notes.txt", written: anHourAgo)
        file(".editor-1.tmp", written: anHourAgo)
        file("photo-large.jpg", written: anHourAgo)
        try FileManager.default.createDirectory(atPath: directory.url("out/a/.imagepipe-folder.tmp"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: directory.url("out/a/.imagepipe-link.tmp"), withDestinationPath: "photo-large.jpg")
        file(".imagepipe-4242abc-9.tmp", written: anHourAgo)
        _ = directory.write("out/b/.imagepipe-4242abc-10.tmp", "bytes")
        try? FileManager.default.setAttributes([.modificationDate: anHourAgo], ofItemAtPath: directory.url("out/b/.imagepipe-4242abc-10.tmp"))

        _ = try storage.put(object("a/new.jpg", "", from: "new.png", sha: "a", body: Data("new".utf8)))
        let left = Set(try FileManager.default.contentsOfDirectory(atPath: directory.url("out/a")))
        // Only a put's own names, regular files, unwritten for an hour; the symbolic link is not followed.
        #expect(
            left == [
                ".imagepipe-4242abc-8.tmp", ".imagepipe-notes.txt", ".editor-1.tmp", "photo-large.jpg", ".imagepipe-folder.tmp",
                ".imagepipe-link.tmp", "new.jpg",
            ])
        #expect(storage.sweeper.removed == 2)
        #expect(FileManager.default.fileExists(atPath: directory.url("out/b/.imagepipe-4242abc-10.tmp")), "no put went into b")

        // Once per directory per process: a second put there lists it no more.
        file(".imagepipe-4242abc-11.tmp", written: anHourAgo)
        _ = try storage.put(object("a/second.jpg", "", from: "second.png", sha: "b", body: Data("second".utf8)))
        #expect(FileManager.default.fileExists(atPath: directory.url("out/a/.imagepipe-4242abc-11.tmp")))
    }

    /// A temporary file written as a put writes it, ready for a round.
    func written(_ key: String, root: String, as name: String = "test", object: StorageObject? = nil) -> LocalDirectoryStorage.WrittenFile {
        let path = root + "/" + key, directory = (path as NSString).deletingLastPathComponent
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let temporary = directory + "/.imagepipe-\(name).tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        _ = write(fd, "bytes", 5)
        return LocalDirectoryStorage.WrittenFile(
            fd: fd, temporary: temporary, path: path, directory: directory,
            object: object ?? StorageObject(key: key, body: Data(), contentType: "image/jpeg"), bytes: 5,
            url: LocalPath.fileURL(path))
    }

    @Test func whenADirectoryCannotBeSyncedAPutThatFoundItsFileInPlaceFailsTooAndKeepsIt() throws {
        let root = directory.url("out")
        // Two jobs of one original share a key: the first moves its file there, the second finds it.
        let first = object("k.jpg", "", from: "a.jpg", sha: "1", policy: .create)
        let failing: ([String]) -> [Int32?] = { $0.map { _ in EIO } }
        let outcomes = LocalDirectoryStorage.commit(
            [written("k.jpg", root: root, as: "one", object: first), written("k.jpg", root: root, as: "two", object: first)],
            root: root, syncDirectories: failing)
        #expect(outcomes.allSatisfy { (try? $0.get()) == nil }, "neither is reported stored while the name may not be on disk")
        #expect(directory.files(under: "out").isEmpty, "the file this round moved there is taken out again")
        // A file found in place from before (another job's, perhaps reported done) is never removed.
        _ = try LocalDirectoryStorage(root: root).put(first)
        let found = LocalDirectoryStorage.commit([written("k.jpg", root: root, as: "three", object: first)], root: root, syncDirectories: failing)
        #expect((try? found[0].get()) == nil)
        #expect(directory.files(under: "out") == ["k.jpg"])
    }

    @Test func aFileWhoseSyncFailsIsNeitherMovedNorLeftBehind() throws {
        let root = directory.url("out")
        let outcomes = LocalDirectoryStorage.commit([written("a/x.jpg", root: root)], root: root, syncFiles: { $0.map { _ in EIO } })
        #expect(throws: ImagePipeError.self) { try outcomes[0].get() }
        if case .failure(let error) = outcomes[0] {
            #expect(error.code == .storageUnavailable && error.reason.contains("cannot fsync \(root)/a/x.jpg"), "\(error.reason)")
        }
        #expect(directory.files(under: "out").isEmpty, "neither under its name nor as a temporary file")
    }

    @Test func aFileWhoseDirectoriesCannotBeSyncedIsTakenBackOutOfPlace() throws {
        let root = directory.url("out")
        // The file's own directory syncs; the one above it, made for it, does not.
        let synced = Mutex<[String]>([])
        let outcomes = LocalDirectoryStorage.commit(
            [written("a/b/x.jpg", root: root), written("c.jpg", root: root)], root: root,
            syncDirectories: { paths in
                synced.withLock { $0 += paths }
                return paths.map { $0 == root + "/a" ? EIO : nil }
            })
        if case .failure(let error) = outcomes[0] {
            #expect(error.code == .storageUnavailable && error.reason.contains("cannot fsync directory \(root)/a"), "\(error.reason)")
        } else {
            Issue.record("a put whose directory's name is not on disk was reported stored")
        }
        #expect((try? outcomes[1].get())?.key == "c.jpg", "a file elsewhere is unaffected")
        #expect(directory.files(under: "out") == ["c.jpg"], "the failed file is removed, so a retry makes it again")
        #expect(Set(synced.withLock { $0 }) == [root + "/a/b", root + "/a", root], "every directory from the file up to the root, each once")
        #expect(synced.withLock { $0.count } == 3)
    }

    @Test func aPutThatCannotWriteFailsAtOnceAndGivesItsRoomBack() throws {
        let storage = LocalDirectoryStorage(root: directory.url("out"))
        // More failures than files may wait for a round: a slot kept by each would block the last put.
        let finished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            for _ in 0..<300 {
                storage.put(StorageObject(key: "../outside.jpg", body: Data([1]), contentType: "image/jpeg")) { outcome in
                    #expect(throws: ImagePipeError.self) { try outcome.get() }
                }
            }
            storage.put(StorageObject(key: "fine.jpg", body: Data([2]), contentType: "image/jpeg")) { outcome in
                #expect((try? outcome.get())?.bytes == 1)
                finished.signal()
            }
        }
        #expect(finished.wait(timeout: .now() + 30) == .success, "the last put was not held back")
        #expect(directory.files(under: "out") == ["fine.jpg"])
    }

    func object(
        _ key: String, _ text: String, from source: String, sha: Character, policy: WritePolicy = .replaceSameOriginal,
        variant: String = "large=2048x2048,jpeg,q82", body: Data? = nil
    ) -> StorageObject {
        StorageObject(
            key: key, body: body ?? Data(text.utf8), contentType: "image/jpeg",
            origin: Origin(sha256: String(repeating: sha, count: 64), source: source, width: 4, height: 3, variant: variant),
            policy: policy)
    }

    /// An origin is read back whole or not at all: one whose facts would take it past what is read
    /// back (a very long name) is recorded without them, not as no origin.
    @Test func anOriginTooLongWithItsFactsIsRecordedWithoutThem() throws {
        let storage = LocalDirectoryStorage(root: directory.url("out"))
        let facts = ImageFacts(
            pdq: ImageFacts.PDQ(hash: String(repeating: "ab", count: 32), quality: 100),
            palette: Array(repeating: ImageFacts.Colour(color: "#123456", share: 0.1), count: 6),
            provenance: ImageFacts.Provenance(c2pa: true, digitalSourceType: "http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia")
        )
        for (name, length) in [("short", 10), ("long", 3_600)] {
            var object = object("\(name).jpg", "pixels", from: String(repeating: "d/", count: length / 2) + "photo.jpg", sha: "1")
            object.origin?.image = Origin.Image(width: 4, height: 3, format: .jpeg, facts: facts)
            _ = try storage.put(object)
            let origin = try #require(LocalDirectoryStorage.origin(atPath: directory.url("out/\(name).jpg")), "\(name)")
            #expect(origin.source == object.origin?.source)
            #expect(origin.image?.facts == (length < 1000 ? facts : nil), "\(name)")
        }
    }

    @Test func recordsTheOriginInAnExtendedAttributeAndReportsIt() throws {
        let storage = LocalDirectoryStorage(root: directory.url("out"))
        _ = try storage.put(object("a/photo-large.jpg", "pixels", from: "a/photo.jpg", sha: "1"))
        let origin = try #require(LocalDirectoryStorage.origin(atPath: directory.url("out/a/photo-large.jpg")))
        #expect(
            origin
                == Origin(
                    sha256: String(repeating: "1", count: 64), source: "a/photo.jpg", width: 4, height: 3,
                    variant: "large=2048x2048,jpeg,q82"))
        let existing = try #require(try storage.existing("a/photo-large.jpg"))
        #expect(existing.origin == origin && existing.bytes == 6)
        #expect(try storage.existing("a/missing.jpg") == nil)
        #expect(try storage.existing("no/such/dir/x.jpg") == nil)
    }

    @Test func refusesToReplaceAnotherOriginalsFileButReplacesItsOwnAndOverwritesWhenAllowed() throws {
        let storage = LocalDirectoryStorage(root: directory.path)
        _ = try storage.put(object("photo-large.jpg", "blinds", from: "photo.jpg", sha: "1"))
        do {
            _ = try storage.put(object("photo-large.jpg", "dune", from: "photo.jpg", sha: "2"))
            Issue.record("another original's pixels must not replace the file")
        } catch {
            #expect(error.code == .keyCollision)
            #expect(
                error.reason.contains("'photo.jpg' changed since output key 'photo-large.jpg' was made from it (then sha256 1111111111111111"),
                "\(error.reason)")
        }
        #expect(try String(contentsOfFile: directory.url("photo-large.jpg"), encoding: .utf8) == "blinds")
        // A file imagepipe did not write (no origin) is not replaced either.
        directory.write("foreign.jpg", "someone else's")
        #expect(throws: ImagePipeError.self) { try storage.put(object("foreign.jpg", "dune", from: "f.jpg", sha: "2")) }
        // The same original again (a re-delivery, a re-run) replaces its own file.
        _ = try storage.put(object("photo-large.jpg", "blinds, again", from: "renamed.jpg", sha: "1"))
        #expect(try String(contentsOfFile: directory.url("photo-large.jpg"), encoding: .utf8) == "blinds, again")
        _ = try storage.put(object("photo-large.jpg", "dune", from: "photo.jpg", sha: "2", policy: .replaceAny))
        #expect(try String(contentsOfFile: directory.url("photo-large.jpg"), encoding: .utf8) == "dune")
        #expect(LocalDirectoryStorage.origin(atPath: directory.url("photo-large.jpg"))?.sha256.first == "2")
        #expect(directory.files() == ["foreign.jpg", "photo-large.jpg"], "no temporary file left behind")
    }

    @Test func ofConcurrentPutsFromTwoOriginalsExactlyTheFirstWins() throws {
        // The link that moves a file into place fails when the name is taken, so between racing
        // writers of different originals one wins and the others fail: no check-then-write window.
        for round in 0..<20 {
            let storage = LocalDirectoryStorage(root: directory.url("round\(round)"))
            let outcomes = Mutex<[Character: Bool]>([:])
            DispatchQueue.concurrentPerform(iterations: 4) { index in
                let sha = Character(String(index + 1))
                let stored = (try? storage.put(object("k.jpg", "from \(sha)", from: "\(sha).jpg", sha: sha, policy: .create))) != nil
                outcomes.withLock { $0[sha] = stored }
            }
            let winners = outcomes.withLock { $0.filter(\.value).keys }
            #expect(winners.count == 1)
            let body = try String(contentsOfFile: directory.url("round\(round)/k.jpg"), encoding: .utf8)
            #expect(body == "from \(winners.first!)", "the file holds the winner's bytes")
        }
    }

    @Test func deleteRemovesTheFileAndTheDirectoriesItLeavesEmpty() throws {
        let storage = LocalDirectoryStorage(root: directory.url("out"))
        _ = try storage.put(object("2024/trip/a-large.jpg", "x", from: "a.jpg", sha: "1"))
        _ = try storage.put(object("2024/b-large.jpg", "x", from: "b.jpg", sha: "1"))
        try storage.delete("2024/trip/a-large.jpg")
        try storage.delete("2024/trip/a-large.jpg")
        #expect(directory.files(under: "out") == ["2024/b-large.jpg"])
        #expect(!FileManager.default.fileExists(atPath: directory.url("out/2024/trip")))
        #expect(FileManager.default.fileExists(atPath: directory.url("out")), "the root stays")
    }

    @Test func keysLongerThanTheFileSystemTakesAreInvalidKeys() throws {
        let storage = LocalDirectoryStorage(root: directory.path)
        let long = String(repeating: "é", count: 128) + ".jpg"
        #expect(throws: ImagePipeError.self) { try storage.keyLimits.check(long) }
        #expect(throws: Never.self) { try storage.keyLimits.check(String(repeating: "a", count: 251) + ".jpg") }
        do {
            _ = try storage.put(object(long, "x", from: "a.jpg", sha: "1"))
            Issue.record("a 260-byte name must be refused")
        } catch {
            #expect(error.code == .invalidKey && error.reason.contains("260 bytes"))
        }
        // At the limit itself the file is written: the temporary name is short.
        _ = try storage.put(object(String(repeating: "a", count: 251) + ".jpg", "x", from: "a.jpg", sha: "1"))
    }

    @Test func theProbeCreatesTheRootAndLeavesNothingBehind() throws {
        let storage = LocalDirectoryStorage(root: directory.url("new/out"))
        #expect(!FileManager.default.fileExists(atPath: directory.url("new")), "nothing is created before the probe")
        try storage.probe()
        #expect(FileManager.default.fileExists(atPath: directory.url("new/out")))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url("new/out")).isEmpty)
        directory.write("file", "x")
        do {
            try LocalDirectoryStorage(root: directory.url("file/out")).probe()
            Issue.record("a destination under a file cannot be created")
        } catch {
            #expect(error.code == .configuration && error.reason.contains("file/out"))
        }
    }
}

/// Keys whose segments start with a combining mark (fixtures/fuzz/crashes/key-template/): a `/` and
/// the mark after it are one character, so the storage cuts keys into segments at `/` bytes.
@Suite struct LocalDirectoryStorageSegmentTests {
    let mark = "\u{301}"

    @Test func suchAKeyIsNeverWrittenOutsideTheDestination() throws {
        let directory = TemporaryDirectory()
        let storage = LocalDirectoryStorage(root: directory.url("out"))
        #expect(throws: ImagePipeError.self) {
            try storage.put(StorageObject(key: "../\(mark)x/evil.jpg", body: Data([1]), contentType: "image/jpeg"))
        }
        #expect(directory.files().isEmpty, "\(directory.files())")
    }

    @Test func aKeyWhoseSegmentStartsWithACombiningMarkIsStoredWhereItSays() throws {
        let directory = TemporaryDirectory()
        let storage = LocalDirectoryStorage(root: directory.url("out"))
        _ = try storage.put(StorageObject(key: "a/\(mark)x-large.jpg", body: Data([1]), contentType: "image/jpeg"))
        #expect(directory.files(under: "out") == ["a/\(mark)x-large.jpg"])
        try storage.delete("a/\(mark)x-large.jpg")
        #expect(directory.files(under: "out").isEmpty)
        // Two names of 201 bytes each, not one of 403, for the file system's 255-byte limit.
        let limits = KeyLimits.localDirectory(root: directory.path)
        try limits.check(String(repeating: "a", count: 201) + "/" + mark + String(repeating: "b", count: 199))
        #expect(throws: ImagePipeError.self) { try limits.check("a/" + mark + String(repeating: "b", count: 254)) }
    }
}
