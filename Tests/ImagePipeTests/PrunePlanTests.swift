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

    func sources(_ files: [String: Data]) -> SourceDigests {
        let jobs = files.keys.sorted().map { name in
            Job(path: directory.write("src/" + name, files[name]!), relativePath: name)
        }
        return SourceDigests(jobs: jobs, repositories: [:], maxSourceBytes: 1 << 20)
    }

    @Test func aNameCutTo200CharactersInObjectMetadataStillFindsItsSource() throws {
        let long = String(repeating: "d", count: 150) + "/" + String(repeating: "n", count: 100) + ".jpg"
        let bytes = Data("the original".utf8)
        let recorded = try #require(Origin(metadataFields: Origin(sha256: Self.sha256(bytes), source: long, variant: "small=1x").metadataFields))
        #expect(recorded.source.count == 200 && recorded.source != long, "the record is cut")

        let kept = PrunePlan(objects: [("a.webp", recorded)], sources: sources([long: bytes]), variants: ["small"])
        #expect(kept.entries.map(\.verdict) == [.keep])

        let changed = PrunePlan(objects: [("a.webp", recorded)], sources: sources([long: Data("other".utf8)]), variants: ["small"])
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
                ("a/s.webp", Origin(sha256: Self.sha256(old), source: "IMG_0001.jpg", variant: "s=1x")),
                ("b/s.webp", Origin(sha256: Self.sha256(new), source: "IMG_0001.jpg", variant: "s=1x")),
            ],
            sources: digests, variants: ["s"])
        #expect(plan.entries.map(\.verdict) == [.keep, .keep])
    }

    @Test func anOutputWhoseRecordedOriginalChangedIsKeptWhileACopyHasItsBytes() {
        // a.jpg and b.jpg were copies; a `{hash}` output records a.jpg; a.jpg is edited since.
        let bytes = Data("the photo".utf8)
        let plan = PrunePlan(
            objects: [("h/s.webp", Origin(sha256: Self.sha256(bytes), source: "a.jpg", variant: "s=1x"))],
            sources: sources(["a.jpg": Data("edited".utf8), "b.jpg": bytes]), variants: ["s"])
        #expect(plan.entries.map(\.verdict) == [.keep])
        let alone = PrunePlan(
            objects: [("h/s.webp", Origin(sha256: Self.sha256(bytes), source: "a.jpg", variant: "s=1x"))],
            sources: sources(["a.jpg": Data("edited".utf8)]), variants: ["s"])
        #expect(alone.entries.map(\.verdict) == [.changed])
    }

    @Test func anOutputOfASourceTheScanCouldNotTakeIsKeptAndReported() {
        let plan = PrunePlan(
            objects: [("a-s.webp", Origin(sha256: String(repeating: "1", count: 64), source: "a.jpg", variant: "s=1x"))],
            sources: SourceDigests(
                jobs: [], unavailable: ["a.jpg": "a link whose target is gone"], repositories: [:], maxSourceBytes: 1 << 20),
            variants: ["s"])
        #expect(plan.entries.map(\.verdict) == [.keep])
        #expect(plan.problems.contains { $0.contains("a link whose target is gone") })
    }

    @Test func anOutputWithoutARecordedVariantIsJudgedByItsOriginalAlone() {
        let bytes = Data("x".utf8)
        let old = Origin(sha256: Self.sha256(bytes), source: "a.jpg")
        let plan = PrunePlan(
            objects: [("a-large.jpg", old), ("b-large.jpg", Origin(sha256: Self.sha256(bytes), source: "b.jpg")), ("c.txt", nil)],
            sources: sources(["a.jpg": bytes]), variants: ["thumb"])
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
            objects: [("a-s.webp", Origin(sha256: Self.sha256(Data("a".utf8)), source: "a.jpg", variant: "s=1x"))],
            sources: digests, variants: ["s"])
        #expect(plan.entries.map(\.verdict) == [.keep])
        #expect(plan.problems.isEmpty, "b.jpg was never read")

        let orphan = PrunePlan(
            objects: [("gone-s.webp", Origin(sha256: String(repeating: "0", count: 64), source: "gone.jpg", variant: "s=1x"))],
            sources: digests, variants: ["s"])
        #expect(orphan.entries.map(\.verdict) == [.keep])
        #expect(orphan.entries[0].reason.hasPrefix("kept: 'gone.jpg' is not among the sources, but some sources could not be read"))
        #expect(orphan.problems.count == 1 && orphan.problems[0].hasPrefix("b.jpg: "), "\(orphan.problems)")
    }
}
