// `imagepipe prune` on a local destination: real outputs of a real batch, their origins in extended attributes.
import Foundation
import ImagePipe
import ImagePipeLocalStorage
import ImagePipeTestSupport
import Testing

/// `imagepipe prune` end to end on a folder: a batch makes the outputs, the sources change, prune
/// judges each output by the origin the batch recorded on it.
@Suite(.offThePool) struct PruneCommandTests {
    let directory = TemporaryDirectory()
    static let small = "small=100x,webp,q70", big = "big=120x,jpeg,q80"

    /// A batch of four originals with two variants, then: one original removed, one given other
    /// bytes, one renamed (same bytes), and two files imagepipe did not write put beside the outputs.
    func makeOutputs() throws {
        CommandRunner.copyFixture("images/formats/small-200x150.jpg", to: directory, as: "src/keep.jpg")
        CommandRunner.copyFixture("images/formats/small-400x300.jpg", to: directory, as: "src/gone.jpg")
        CommandRunner.copyFixture("images/formats/alpha.png", to: directory, as: "src/trip/changed.png")
        CommandRunner.copyFixture("images/formats/grey.jpg", to: directory, as: "src/renamed.jpg")
        let batch = try CommandRunner.run([
            "batch", directory.url("src"), "--dest", directory.url("out"), "--variant", Self.small, "--variant", Self.big, "--jobs", "1",
        ])
        #expect(batch.status == 0, "\(batch.stderr)")
        try FileManager.default.removeItem(atPath: directory.url("src/gone.jpg"))
        CommandRunner.copyFixture("images/formats/tall.jpg", to: directory, as: "src/trip/changed.png")
        try FileManager.default.moveItem(atPath: directory.url("src/renamed.jpg"), toPath: directory.url("src/renamed-now.jpg"))
        directory.write("out/foreign.jpg", Fixtures.data("images/formats/small-200x150.jpg"))
        directory.write("out/notes/readme.txt", "someone else's")
    }

    /// Each file under `out` with its SHA-256.
    func outputs() -> [String: String] {
        Dictionary(
            uniqueKeysWithValues: directory.files(under: "out").map {
                ($0, SHA256Digest.hash(try! Data(contentsOf: URL(fileURLWithPath: directory.url("out/" + $0)))).hex)
            })
    }

    static let expectedLines = [
        "dropped-variant gone-big.jpg: variant 'big' of 'gone.jpg' is no longer made",
        "orphaned gone-small.webp: 'gone.jpg' is not among the sources",
        "dropped-variant keep-big.jpg: variant 'big' of 'keep.jpg' is no longer made",
        "dropped-variant renamed-big.jpg: variant 'big' of 'renamed.jpg' is no longer made",
        "dropped-variant trip/changed-big.jpg: variant 'big' of 'trip/changed.png' is no longer made",
    ]

    @Test func aDryRunListsEachOutputToGoWithItsReasonAndDeletesNothing() throws {
        try makeOutputs()
        let before = outputs()
        #expect(before.count == 10, "\(before.keys.sorted())")

        let output = try CommandRunner.run(["prune", directory.url("out"), "--sources", directory.url("src"), "--variant", Self.small])

        #expect(output.status == 0, "\(output.stderr)")
        let lines = output.stdout.split(separator: "\n").map(String.init)
        #expect(Array(lines.filter { !$0.hasPrefix("changed ") }) == Self.expectedLines, "\(output.stdout)")
        let changed = try #require(lines.first { $0.hasPrefix("changed ") })
        #expect(changed.hasPrefix("changed trip/changed-small.webp: 'trip/changed.png' has other bytes now (sha256 was "), "\(changed)")
        #expect(
            output.stderr.contains(
                "imagepipe: 2 outputs kept, 6 to delete (orphaned: 1, changed: 1, dropped variant: 4), "
                    + "left alone (made from other sources: 0, foreign: 2); "
                    + "dry run, nothing was deleted"), "\(output.stderr)")
        #expect(outputs() == before, "a dry run changes nothing")
    }

    @Test func deleteRemovesExactlyTheListedOutputsAndLeavesForeignFilesAlone() throws {
        try makeOutputs()
        let before = outputs()

        let output = try CommandRunner.run([
            "prune", directory.url("out"), "--sources", directory.url("src"), "--variant", Self.small, "--delete",
        ])

        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stderr.contains("2 outputs kept, 6 deleted (orphaned: 1, changed: 1"), "\(output.stderr)")
        let after = outputs()
        #expect(after.keys.sorted() == ["foreign.jpg", "keep-small.webp", "notes/readme.txt", "renamed-small.webp"])
        #expect(after.allSatisfy { before[$0.key] == $0.value }, "what stays is untouched")
        #expect(LocalDirectoryStorage.origin(atPath: directory.url("out/keep-small.webp"))?.source == "keep.jpg")
        #expect(!FileManager.default.fileExists(atPath: directory.url("out/trip")), "a folder left empty goes too")

        let again = try CommandRunner.run(["prune", directory.url("out"), "--sources", directory.url("src"), "--variant", Self.small])
        #expect(again.status == 0 && again.stdout.isEmpty, "\(again.stdout)\(again.stderr)")
        #expect(
            again.stderr.contains(
                "2 outputs kept, 0 to delete (orphaned: 0, changed: 0, dropped variant: 0), left alone (made from other sources: 0, foreign: 2)"))
    }

    /// The variants come from the configuration file as batch takes them; `--delete` is never taken from it.
    @Test func theVariantsComeFromTheConfigurationFileButDeleteDoesNot() throws {
        try makeOutputs()
        let before = outputs()
        directory.write("imagepipe.toml", "variant = [\"\(Self.small)\"]\n")

        let output = try CommandRunner.run([
            "prune", directory.url("out"), "--sources", directory.url("src"), "--config", directory.url("imagepipe.toml"),
        ])
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stderr.contains("2 outputs kept, 6 to delete (orphaned: 1, changed: 1, dropped variant: 4)"), "\(output.stderr)")

        directory.write("delete.toml", "variant = [\"\(Self.small)\"]\n[prune]\ndelete = true\n")
        let refused = try CommandRunner.run([
            "prune", directory.url("out"), "--sources", directory.url("src"), "--config", directory.url("delete.toml"),
        ])
        #expect(refused.status == 2, "\(refused.stderr)")
        #expect(refused.stderr.contains("prune.delete: names no option of prune"), "\(refused.stderr)")
        #expect(refused.stdout.isEmpty, "stopped before anything was judged")
        #expect(outputs() == before)
    }

    /// An empty source folder (an unmounted disk) would make every output an orphan: listed, never deleted.
    @Test func deleteRefusesWhenTheSourcesHoldNoFiles() throws {
        try makeOutputs()
        let before = outputs()
        // The disk under src/ is not mounted: the folder is there, its files are not.
        try FileManager.default.moveItem(atPath: directory.url("src"), toPath: directory.url("elsewhere"))
        try FileManager.default.createDirectory(atPath: directory.url("src"), withIntermediateDirectories: true)

        let output = try CommandRunner.run([
            "prune", directory.url("out"), "--sources", directory.url("src"), "--variant", Self.small, "--variant", Self.big, "--delete",
        ])

        #expect(output.status == 1, "\(output.stderr)")
        #expect(output.stderr.contains("not deleting anything: the sources (\(directory.url("src"))) hold no files"), "\(output.stderr)")
        #expect(output.stdout.split(separator: "\n").count == 8, "every output is listed as orphaned: \(output.stdout)")
        #expect(outputs() == before)
    }

    /// Two folders write under one destination, as two batches into `s3://media/photos` do: a prune
    /// given one of them judges its outputs and leaves every output of the other alone, counted,
    /// even those whose names the given folder has too (other bytes) or whose variants it was not given.
    @Test func aPruneGivenOneFolderDeletesNothingOfAnotherFolderWritingIntoTheSameDestination() throws {
        CommandRunner.copyFixture("images/formats/small-200x150.jpg", to: directory, as: "folderA/keep.jpg")
        CommandRunner.copyFixture("images/formats/small-400x300.jpg", to: directory, as: "folderA/gone.jpg")
        CommandRunner.copyFixture("images/formats/alpha.png", to: directory, as: "folderB/b1.png")
        CommandRunner.copyFixture("images/formats/grey.jpg", to: directory, as: "folderB/b2.jpg")
        CommandRunner.copyFixture("images/formats/tall.jpg", to: directory, as: "folderB/trip/b3.jpg")
        for (folder, variants) in [("folderA", [Self.small]), ("folderB", [Self.small, Self.big])] {
            let batch = try CommandRunner.run(
                ["batch", directory.url(folder), "--dest", directory.url("out"), "--jobs", "1"] + variants.flatMap { ["--variant", $0] })
            #expect(batch.status == 0, "\(batch.stderr)")
        }
        try FileManager.default.removeItem(atPath: directory.url("folderA/gone.jpg"))
        let folderB = outputs().filter { !$0.key.hasPrefix("keep-") && !$0.key.hasPrefix("gone-") }
        #expect(folderB.count == 6, "\(folderB.keys.sorted())")

        let dryRun = try CommandRunner.run(["prune", directory.url("out"), "--sources", directory.url("folderA"), "--variant", Self.small])
        #expect(dryRun.status == 0, "\(dryRun.stderr)")
        #expect(dryRun.stdout == "orphaned gone-small.webp: 'gone.jpg' is not among the sources\n", "\(dryRun.stdout)")
        #expect(
            dryRun.stderr.contains(
                "1 outputs kept, 1 to delete (orphaned: 1, changed: 0, dropped variant: 0), left alone (made from other sources: 6, foreign: 0)"),
            "\(dryRun.stderr)")

        let deleted = try CommandRunner.run([
            "prune", directory.url("out"), "--sources", directory.url("folderA"), "--variant", Self.small, "--delete",
        ])
        #expect(deleted.status == 0, "\(deleted.stderr)")
        let after = outputs()
        #expect(after.keys.sorted() == (folderB.keys + ["keep-small.webp"]).sorted())
        #expect(folderB.allSatisfy { after[$0.key] == $0.value }, "folderB's outputs are untouched")
    }

    /// One empty source folder among others (an unmounted disk beside a mounted one) would make the
    /// outputs made from it look orphaned: listed, never deleted; a missing one stops prune at once.
    @Test func deleteRefusesWhenOneOfTheSourceFoldersHoldsNoFilesOrIsMissing() throws {
        try makeOutputs()
        let before = outputs()
        directory.write("other/c.jpg", Fixtures.data("images/formats/tiny.png"))
        directory.write("empty/.hidden.jpg", Fixtures.data("images/formats/tiny.png"))
        let sources = ["--sources", directory.url("src"), "--sources", directory.url("empty"), "--sources", directory.url("other")]

        let output = try CommandRunner.run(["prune", directory.url("out")] + sources + ["--variant", Self.small, "--delete"])

        #expect(output.status == 1, "\(output.stderr)")
        #expect(
            output.stderr.contains("not deleting anything: a source folder holds no files (\(directory.url("empty"))), which would make"),
            "\(output.stderr)")
        #expect(!output.stdout.isEmpty, "what would go is listed")
        #expect(outputs() == before)

        let missing = try CommandRunner.run([
            "prune", directory.url("out"), "--sources", directory.url("src"), "--sources", directory.url("typo"), "--variant", Self.small,
            "--delete",
        ])
        #expect(missing.status == 2, "\(missing.stderr)")
        #expect(missing.stderr.contains("source \(directory.url("typo")) does not exist"), "\(missing.stderr)")
        #expect(missing.stdout.isEmpty && outputs() == before)
    }

    /// A queue directory's job is read from its worker's claim area, which is gone once it is done:
    /// its outputs record where it was delivered, and a prune of a batch's folder beside it in the
    /// same destination leaves them alone.
    @Test func theOutputsOfAQueueDirectoryRecordTheInboxAndABatchFoldersPruneLeavesThemAlone() throws {
        CommandRunner.copyFixture("images/formats/small-200x150.jpg", to: directory, as: "src/keep.jpg")
        CommandRunner.copyFixture("images/formats/grey.jpg", to: directory, as: "queue/inbox/2024/upload.jpg")
        let batch = try CommandRunner.run(["batch", directory.url("src"), "--dest", directory.url("out"), "--variant", Self.small])
        #expect(batch.status == 0, "\(batch.stderr)")
        let watch = try CommandRunner.run([
            "watch", directory.url("queue"), "--dest", directory.url("out"), "--variant", Self.small, "--exit-when-empty",
        ])
        #expect(watch.status == 0, "\(watch.stderr)")
        let origin = LocalDirectoryStorage.origin(atPath: directory.url("out/2024/upload-small.webp"))
        #expect(origin?.location == directory.url("queue/inbox/2024/upload.jpg"), "\(String(describing: origin))")
        #expect(LocalDirectoryStorage.origin(atPath: directory.url("out/keep-small.webp"))?.location == directory.url("src/keep.jpg"))

        let output = try CommandRunner.run([
            "prune", directory.url("out"), "--sources", directory.url("src"), "--variant", Self.small, "--delete",
        ])
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stderr.contains("1 outputs kept, 0 deleted"), "\(output.stderr)")
        #expect(output.stderr.contains("made from other sources: 1"), "\(output.stderr)")
        #expect(directory.files(under: "out").sorted() == ["2024/upload-small.webp", "keep-small.webp"])
    }

    /// Variants forgotten (the web preset by default, where the batch made others) would make every
    /// output a dropped variant: listed with a warning, never deleted.
    @Test func deleteRefusesWhenNoOutputIsOfAVariantGiven() throws {
        try makeOutputs()
        let before = outputs()

        let output = try CommandRunner.run(["prune", directory.url("out"), "--sources", directory.url("src"), "--delete"])

        #expect(output.status == 2, "\(output.stderr)")
        #expect(
            output.stderr.contains("warning: no output is of a variant given (large, medium, thumb); the outputs have big, small"),
            "\(output.stderr)")
        #expect(output.stderr.contains("not deleting anything: none of the outputs is of a variant given"), "\(output.stderr)")
        #expect(outputs() == before)
    }

    @Test func aMissingDestinationOrNoSourcesAreUsageErrors() throws {
        directory.write("src/a.jpg", Fixtures.data("images/formats/small-200x150.jpg"))
        let missing = try CommandRunner.run(["prune", directory.url("nothing"), "--sources", directory.url("src")])
        #expect(missing.status == 2, "\(missing.stderr)")
        #expect(missing.stderr.contains("destination \(directory.url("nothing")) does not exist"), "\(missing.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory.url("nothing")), "prune creates nothing")

        let noSources = try CommandRunner.run(["prune", directory.url("src")])
        #expect(noSources.status == 2, "\(noSources.stderr)")
        #expect(noSources.stderr.contains("give the sources the outputs were made from with --sources"), "\(noSources.stderr)")

        let absentSource = try CommandRunner.run(["prune", directory.url("src"), "--sources", directory.url("typo")])
        #expect(absentSource.status == 2, "\(absentSource.stderr)")
        #expect(absentSource.stderr.contains("source \(directory.url("typo")) does not exist"), "\(absentSource.stderr)")
    }
}
