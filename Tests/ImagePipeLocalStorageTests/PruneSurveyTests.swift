// A prune beside a batch writing into the same local destination: the order of its looks and the check before each removal.
import Foundation
import ImagePipe
import ImagePipeLocalStorage
import ImagePipeTestSupport
import Testing

/// The batch is played by the test between the prune's steps, on real files with their recorded
/// origins: what a batch running beside `prune --delete` would do at the worst moment.
@Suite struct PruneSurveyTests {
    let directory = TemporaryDirectory()

    static let variants: Set = ["large"]

    /// What a batch does for one original: the source is there before its output is written.
    func batch(_ name: String, _ bytes: String, into storage: LocalDirectoryStorage) throws(ImagePipeError) {
        directory.write("src/" + name, Data(bytes.utf8))
        let stem = name.replacingOccurrences(of: ".jpg", with: "")
        _ = try storage.put(
            StorageObject(
                key: stem + "-large.jpg", body: Data("output of \(bytes)".utf8), contentType: "image/jpeg",
                origin: Origin(
                    sha256: SHA256Digest.hash(Data(bytes.utf8)).hex, source: name, variant: "large=64x64,jpeg,q80",
                    location: directory.url("src/" + name)),
                policy: .replaceAny))
    }

    /// The sources' folder, as prune is given it.
    var places: SourcePlaces { SourcePlaces(inputs: [directory.url("src")]) }

    func scanSources() throws(ImagePipeError) -> SourceDigests {
        let scan = try SourceScanner(root: directory.url("src")).scan()
        return SourceDigests(jobs: scan.jobs, repositories: [:], maxSourceBytes: 1 << 20)
    }

    @Test func anOutputABatchWritesAfterThePruneLookedAtTheSourcesIsNeverJudgedAnOrphan() throws {
        let storage = LocalDirectoryStorage(root: directory.url("out"))
        try batch("old.jpg", "old pixels", into: storage)
        let (plan, _) = try PruneSurvey.plan(of: storage, pageSize: 1000, lookups: 4, places: places, variants: Self.variants) {
            () throws(ImagePipeError) in
            let digests = try scanSources()
            // An upload arrives and a batch makes its output right after the prune's look at the sources.
            try batch("new.jpg", "new pixels", into: storage)
            return ((), digests)
        }
        #expect(plan.deletions.isEmpty, "\(plan.entries)")
        #expect(plan.entries.map(\.key) == ["old-large.jpg"], "the output written after the listing is not judged")

        let deletion = try PruneSurvey.delete(plan, from: storage, batchSize: 1000, lookups: 4)
        #expect(deletion.failures.isEmpty && deletion.rewritten.isEmpty)
        #expect(directory.files(under: "out").sorted() == ["new-large.jpg", "old-large.jpg"])
    }

    @Test func anOutputWrittenAgainAfterItWasJudgedStaleIsLeftAndReported() throws {
        let storage = LocalDirectoryStorage(root: directory.url("out"))
        try batch("photo.jpg", "first pixels", into: storage)
        try batch("gone.jpg", "gone pixels", into: storage)
        // The original is edited and the other deleted: both outputs are stale now.
        directory.write("src/photo.jpg", Data("second pixels".utf8))
        try FileManager.default.removeItem(atPath: directory.url("src/gone.jpg"))
        let (plan, _) = try PruneSurvey.plan(of: storage, pageSize: 1000, lookups: 4, places: places, variants: Self.variants) {
            () throws(ImagePipeError) in ((), try scanSources())
        }
        #expect(plan.deletions.map(\.key) == ["gone-large.jpg", "photo-large.jpg"], "\(plan.entries)")
        #expect(plan.deletions.map(\.verdict) == [.orphaned, .changed])

        // A batch remakes the edited photo's output before the deletion.
        try batch("photo.jpg", "second pixels", into: storage)
        let deletion = try PruneSurvey.delete(plan, from: storage, batchSize: 1000, lookups: 4)
        #expect(deletion.rewritten.map(\.key) == ["photo-large.jpg"])
        #expect(deletion.failures.isEmpty && deletion.vanished.isEmpty)
        #expect(directory.files(under: "out") == ["photo-large.jpg"], "the fresh output stays, the orphan goes")
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory.url("out/photo-large.jpg"))) == Data("output of second pixels".utf8))
        #expect(
            deletion.summary(of: plan)
                == "0 outputs kept, 2 to delete (orphaned: 1, changed: 1, dropped variant: 0), "
                + "left alone (made from other sources: 0, foreign: 0): "
                + "1 deleted, 1 left, written again since they were judged")
    }

    @Test func aDirectoryIsCheckedAndPrunedOneOutputAtATimeSoOneRewrittenDuringTheDeletionsIsLeft() throws {
        let storage = LocalDirectoryStorage(root: directory.url("out"))
        for name in ["a.jpg", "b.jpg", "c.jpg"] {
            try batch(name, "first \(name)", into: storage)
            directory.write("src/" + name, Data("edited \(name)".utf8))
        }
        let (plan, _) = try PruneSurvey.plan(of: storage, pageSize: 1000, lookups: 4, places: places, variants: Self.variants) {
            () throws(ImagePipeError) in ((), try scanSources())
        }
        #expect(plan.deletions.map(\.verdict) == [.changed, .changed, .changed])
        // The batch remakes c's output while the prune removes a's.
        let watched = RemovalWatcher(storage) { key throws(ImagePipeError) in
            if key == "a-large.jpg" { try batch("c.jpg", "edited c.jpg", into: storage) }
        }
        let deletion = try PruneSurvey.delete(plan, from: watched, batchSize: 1000, lookups: 4)
        #expect(deletion.rewritten.map(\.key) == ["c-large.jpg"])
        #expect(directory.files(under: "out") == ["c-large.jpg"])
    }

    @Test func anOutputRemovedByOthersBeforeTheDeletionIsNoFailure() throws {
        let storage = LocalDirectoryStorage(root: directory.url("out"))
        try batch("gone.jpg", "gone pixels", into: storage)
        try FileManager.default.removeItem(atPath: directory.url("src/gone.jpg"))
        let (plan, _) = try PruneSurvey.plan(of: storage, pageSize: 1000, lookups: 4, places: places, variants: Self.variants) {
            () throws(ImagePipeError) in ((), try scanSources())
        }
        #expect(plan.deletions.map(\.key) == ["gone-large.jpg"])
        try FileManager.default.removeItem(atPath: directory.url("out/gone-large.jpg"))
        let deletion = try PruneSurvey.delete(plan, from: storage, batchSize: 1000, lookups: 4)
        #expect(deletion.vanished.map(\.key) == ["gone-large.jpg"] && deletion.failures.isEmpty && deletion.rewritten.isEmpty)
    }
}

/// A directory that runs `removed` after each file it removes: a batch writing between two removals.
private struct RemovalWatcher: PrunableStorage {
    let storage: LocalDirectoryStorage
    let removed: @Sendable (String) throws(ImagePipeError) -> Void

    init(_ storage: LocalDirectoryStorage, removed: @escaping @Sendable (String) throws(ImagePipeError) -> Void) {
        self.storage = storage
        self.removed = removed
    }

    var keyLimits: KeyLimits { storage.keyLimits }
    var location: String { storage.location }
    var removesSeveralAtOnce: Bool { storage.removesSeveralAtOnce }
    func put(_ object: StorageObject) throws(ImagePipeError) -> StoredObject { try storage.put(object) }
    func existing(_ key: String) throws(ImagePipeError) -> ExistingObject? { try storage.existing(key) }
    func delete(_ key: String) throws(ImagePipeError) { try storage.delete(key) }
    func probe() throws(ImagePipeError) { try storage.probe() }
    func allKeys(pageSize: Int) throws(ImagePipeError) -> [String] { try storage.allKeys(pageSize: pageSize) }

    func delete(_ keys: [String], batchSize: Int) throws(ImagePipeError) -> [KeyFailure] {
        let failures = try storage.delete(keys, batchSize: batchSize)
        for key in keys { try removed(key) }
        return failures
    }
}
