// PrunePlan's verdicts on origins as stores record them, against real files: cut names, copies, old records.
import Foundation
import ImagePipe
import ImagePipeTestSupport
import Testing

/// The judgments the CLI tests do not reach: names cut to fit object metadata, outputs recorded
/// before variants were, and sources read only when an output asks about them.
@Suite struct PrunePlanTests {
    let directory = TemporaryDirectory()

    static func sha256(_ data: Data) -> String { SHA256Digest.hash(data).hex }

    /// The source folder of most tests, as prune is given it.
    var places: SourcePlaces { SourcePlaces(inputs: [directory.url("src")]) }

    /// An origin as a batch over `src` records it: its name, and where it lies.
    func origin(_ sha256: String, _ source: String, variant: String? = "s=1x") -> Origin {
        Origin(sha256: sha256, source: source, variant: variant, location: directory.url("src/" + source))
    }

    func sources(_ files: [String: Data]) -> SourceDigests {
        let jobs = files.keys.sorted().map { name in
            Job(path: directory.write("src/" + name, files[name]!), relativePath: name)
        }
        return SourceDigests(jobs: jobs, repositories: [:], maxSourceBytes: 1 << 20)
    }

    @Test func aNameCutTo200CharactersInObjectMetadataStillFindsItsSource() throws {
        let long = String(repeating: "d", count: 150) + "/" + String(repeating: "n", count: 100) + ".jpg"
        let bytes = Data("the original".utf8)
        let recorded = try #require(Origin(metadataFields: origin(Self.sha256(bytes), long, variant: "small=1x").metadataFields))
        #expect(recorded.source.count == 200 && recorded.source != long, "the record is cut")

        let kept = PrunePlan(objects: [("a.webp", recorded)], places: places, sources: sources([long: bytes]), variants: ["small"])
        #expect(kept.entries.map(\.verdict) == [.keep])

        let changed = PrunePlan(objects: [("a.webp", recorded)], places: places, sources: sources([long: Data("other".utf8)]), variants: ["small"])
        #expect(changed.entries.map(\.verdict) == [.changed])
    }

    @Test func twoSourcesOfOneNameInTwoFoldersEachKeepTheirOutputs() {
        // `batch 2023 2024 --key '{hash}/{variant}.{ext}'`: both hold IMG_0001.jpg, other bytes.
        let old = Data("2023".utf8)
        let new = Data("2024".utf8)
        let jobs = [
            Job(path: directory.write("2023/IMG_0001.jpg", old), relativePath: "IMG_0001.jpg"),
            Job(path: directory.write("2024/IMG_0001.jpg", new), relativePath: "IMG_0001.jpg"),
        ]
        let digests = SourceDigests(jobs: jobs, repositories: [:], maxSourceBytes: 1 << 20)
        let plan = PrunePlan(
            objects: [
                ("a/s.webp", Origin(sha256: Self.sha256(old), source: "IMG_0001.jpg", variant: "s=1x", location: jobs[0].location)),
                ("b/s.webp", Origin(sha256: Self.sha256(new), source: "IMG_0001.jpg", variant: "s=1x", location: jobs[1].location)),
            ],
            places: SourcePlaces(inputs: [directory.url("2023"), directory.url("2024")]), sources: digests, variants: ["s"])
        #expect(plan.entries.map(\.verdict) == [.keep, .keep])
    }

    @Test func anOutputWhoseRecordedOriginalChangedIsKeptWhileACopyHasItsBytes() {
        // a.jpg and b.jpg were copies; a `{hash}` output records a.jpg; a.jpg is edited since.
        let bytes = Data("the photo".utf8)
        let plan = PrunePlan(
            objects: [("h/s.webp", origin(Self.sha256(bytes), "a.jpg", variant: "s=1x"))],
            places: places, sources: sources(["a.jpg": Data("edited".utf8), "b.jpg": bytes]), variants: ["s"])
        #expect(plan.entries.map(\.verdict) == [.keep])
        let alone = PrunePlan(
            objects: [("h/s.webp", origin(Self.sha256(bytes), "a.jpg", variant: "s=1x"))],
            places: places, sources: sources(["a.jpg": Data("edited".utf8)]), variants: ["s"])
        #expect(alone.entries.map(\.verdict) == [.changed])
    }

    @Test func anOutputOfASourceTheScanCouldNotTakeIsKeptAndReported() {
        let plan = PrunePlan(
            objects: [("a-s.webp", origin(String(repeating: "1", count: 64), "a.jpg"))],
            places: places,
            sources: SourceDigests(
                jobs: [], unavailable: ["a.jpg": "a link whose target is gone"], repositories: [:], maxSourceBytes: 1 << 20),
            variants: ["s"])
        #expect(plan.entries.map(\.verdict) == [.keep])
        #expect(plan.problems.contains { $0.contains("a link whose target is gone") })
    }

    @Test func anOutputWithoutARecordedVariantIsJudgedByItsOriginalAlone() {
        let bytes = Data("x".utf8)
        let old = origin(Self.sha256(bytes), "a.jpg", variant: nil)
        let plan = PrunePlan(
            objects: [("a-large.jpg", old), ("b-large.jpg", origin(Self.sha256(bytes), "b.jpg", variant: nil)), ("c.txt", nil)],
            places: places, sources: sources(["a.jpg": bytes]), variants: ["thumb"])
        // b.jpg is gone, but a.jpg has its bytes: a `{hash}` key may serve both.
        #expect(plan.entries.map(\.verdict) == [.keep, .keep, .foreign])
        #expect(plan.entries[1].reason == "'b.jpg' is gone, but 'a.jpg' has the same bytes")
        #expect(plan.recordedVariants.isEmpty)
    }

    /// Only outputs whose original's name is missing make every source be read; a source that then
    /// cannot be read keeps the output and is reported, so `--delete` refuses.
    @Test func aSourceThatCannotBeReadKeepsTheOutputsItCouldHaveMadeAndIsReported() throws {
        let digests = sources(["a.jpg": Data("a".utf8), "b.jpg": Data("b".utf8)])
        try FileManager.default.removeItem(atPath: directory.url("src/b.jpg"))
        let plan = PrunePlan(
            objects: [("a-s.webp", origin(Self.sha256(Data("a".utf8)), "a.jpg", variant: "s=1x"))],
            places: places, sources: digests, variants: ["s"])
        #expect(plan.entries.map(\.verdict) == [.keep])
        #expect(plan.problems.isEmpty, "b.jpg was never read")

        let orphan = PrunePlan(
            objects: [("gone-s.webp", origin(String(repeating: "0", count: 64), "gone.jpg"))],
            places: places, sources: digests, variants: ["s"])
        #expect(orphan.entries.map(\.verdict) == [.keep])
        #expect(orphan.entries[0].reason.hasPrefix("kept: 'gone.jpg' is not among the sources, but some sources could not be read"))
        // The source is named by the path tried, which holds its name.
        #expect(orphan.problems == ["cannot read \(directory.url("src/b.jpg")): No such file or directory"], "\(orphan.problems)")
    }

    /// Two folders writing under one prefix record the same kind of names; only where the original
    /// was read tells them apart. An output of the folder not given is left alone, whatever its
    /// name, bytes or variant.
    @Test func anOutputOfAFolderNotGivenIsLeftAloneWhateverItsVariantOrName() {
        let bytes = Data("a".utf8)
        let other = Data("b".utf8)
        let outputs: [(key: String, origin: Origin?)] = [
            ("a-s.webp", origin(Self.sha256(bytes), "a.jpg")),
            // folderB's outputs: a name src has too (other bytes), a name src lacks, a variant not given.
            ("b-a-s.webp", Origin(sha256: Self.sha256(other), source: "a.jpg", variant: "s=1x", location: directory.url("folderB/a.jpg"))),
            ("b-s.webp", Origin(sha256: Self.sha256(other), source: "b.jpg", variant: "s=1x", location: directory.url("folderB/b.jpg"))),
            ("b-big.jpg", Origin(sha256: Self.sha256(other), source: "b.jpg", variant: "big=9x", location: directory.url("folderB/b.jpg"))),
            // A sibling whose name begins like the source folder's is no part of it.
            ("c-s.webp", Origin(sha256: Self.sha256(other), source: "c.jpg", variant: "s=1x", location: directory.url("src2/c.jpg"))),
        ]
        let plan = PrunePlan(objects: outputs, places: places, sources: sources(["a.jpg": bytes]), variants: ["s"])

        #expect(plan.entries.map(\.verdict) == [.keep, .otherSources, .otherSources, .otherSources, .otherSources])
        #expect(plan.deletions.isEmpty)
        #expect(plan.entries[1].reason == "'a.jpg' was read from \(directory.url("folderB/a.jpg")), which is not among the sources")
        #expect(plan.summary(deleted: false).hasSuffix("left alone (made from other sources: 4, foreign: 0)"), "\(plan.summary(deleted: false))")
        #expect(plan.unplaced.isEmpty)
    }

    /// An output written before origins recorded where their original lies names it relative to a
    /// folder that is not known: it could be any folder's, so it is left alone and said to be.
    @Test func anOutputThatRecordsNoPlaceIsLeftAloneUnlessItsNameIsAnObjectURL() {
        let legacy = Origin(sha256: String(repeating: "0", count: 64), source: "gone.jpg", variant: "s=1x")
        let plan = PrunePlan(objects: [("gone-s.webp", legacy)], places: places, sources: sources(["a.jpg": Data("a".utf8)]), variants: ["s"])
        #expect(plan.entries.map(\.verdict) == [.otherSources])
        #expect(plan.unplaced.map(\.key) == ["gone-s.webp"])

        // An object source's name is its URL, which says where it lies whatever the record's age.
        let bucket = SourcePlaces(inputs: ["s3://originals/uploads"])
        let inside = Origin(sha256: String(repeating: "0", count: 64), source: "s3://originals/uploads/a.jpg", variant: "s=1x")
        let beside = Origin(sha256: String(repeating: "0", count: 64), source: "s3://originals/uploads2/a.jpg", variant: "s=1x")
        #expect(bucket.placement(of: inside) == .among)
        #expect(bucket.placement(of: beside) == .elsewhere("s3://originals/uploads2/a.jpg"))
        #expect(SourcePlaces(inputs: ["s3://originals"]).placement(of: beside) == .among, "a bucket's root holds every key")
        #expect(SourcePlaces(inputs: ["s3://originals/uploads/a.jpg"]).placement(of: inside) == .among, "an object given by itself")
    }

    /// A location cut to fit object metadata is judged by what is left of it: under a folder when
    /// the folder's path is in it, unknown when the cut falls inside the folder's own path.
    @Test func aLocationCutShortIsAmongTheSourcesOnlyWhenItStillSaysSo() {
        let deep = "/" + String(repeating: "d", count: 250)
        let cut = Origin(sha256: String(repeating: "0", count: 64), source: "a.jpg", location: deep + "/a.jpg")
        #expect(cut.location?.count == Origin.recordedSourceLimit)
        #expect(SourcePlaces(inputs: [deep]).placement(of: cut) == .unknown)
        #expect(SourcePlaces(inputs: ["/" + String(repeating: "d", count: 20)]).placement(of: cut) == .elsewhere(cut.location!))
        let shallow = Origin(sha256: String(repeating: "0", count: 64), source: "a.jpg", location: "/srv/" + String(repeating: "n", count: 300))
        #expect(SourcePlaces(inputs: ["/srv"]).placement(of: shallow) == .among)
    }
}
