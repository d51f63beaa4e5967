// `imagepipe prune` on S3 (moto): outputs of a real batch, origins in object metadata, paged listings, batched deletions.
import Foundation
import ImagePipe
import ImagePipeRemoteStorage
import ImagePipeTestSupport
import Testing

/// The real binary against moto: what it lists, what it deletes and what it leaves. moto's
/// signature check gets a listed prefix's slash wrong (see S3SourceTests), so a destination under a
/// prefix is pruned on the server that does not check signatures; the whole bucket on the one that does.
@Suite(.offThePool) struct PruneS3Tests {
    let directory = TemporaryDirectory()
    static let small = "small=100x,webp,q70", big = "big=120x,jpeg,q80"

    func environment(_ moto: MotoServer) -> [String: String] {
        [
            "AWS_ACCESS_KEY_ID": moto.credentials.accessKeyID, "AWS_SECRET_ACCESS_KEY": moto.credentials.secretAccessKey,
            "AWS_REGION": "us-east-1", "HOME": directory.path,
        ]
    }

    func prune(_ moto: MotoServer, _ arguments: [String], endpoint: String? = nil) throws -> CommandRunner.Output {
        try CommandRunner.run(["prune"] + arguments + ["--endpoint", endpoint ?? moto.endpoint], environment: environment(moto))
    }

    /// Origin metadata as imagepipe writes it, for objects made without a batch: an object source
    /// is placed by its URL, a file by the `location` given (an imagepipe that recorded none left it out).
    static func origin(source: String, sha256: String, variant: String = small, location: String? = nil) -> [String: String] {
        var fields = ["imagepipe-sha256": sha256, "imagepipe-source": PercentEncoding.encodePath(source), "imagepipe-variant": variant]
        if let location { fields["imagepipe-location"] = PercentEncoding.encodePath(location) }
        return fields
    }

    @Test func outputsOfRemovedAndChangedOriginalsAndDroppedVariantsGoAndNothingElse() throws {
        let moto = try MotoServer.unsigned()
        let bucket = try moto.makeBucket()
        CommandRunner.copyFixture("images/formats/small-200x150.jpg", to: directory, as: "src/keep.jpg")
        CommandRunner.copyFixture("images/formats/small-400x300.jpg", to: directory, as: "src/gone.jpg")
        CommandRunner.copyFixture("images/formats/alpha.png", to: directory, as: "src/trip/changed.png")
        let batch = try CommandRunner.run(
            [
                "batch", directory.url("src"), "--dest", "s3://\(bucket)/site", "--endpoint", moto.endpoint,
                "--variant", Self.small, "--variant", Self.big, "--jobs", "1",
            ], environment: environment(moto))
        #expect(batch.status == 0, "\(batch.stderr)")
        try moto.put(bucket, "site/foreign.txt", size: 10)
        // Outside the prefix: not the destination's, whatever it records.
        let goneSHA = Fixtures.data("images/formats/small-400x300.jpg").sha256
        try moto.put(bucket, "outside/gone-small.webp", size: 10, metadata: Self.origin(source: "gone.jpg", sha256: goneSHA))
        try FileManager.default.removeItem(atPath: directory.url("src/gone.jpg"))
        CommandRunner.copyFixture("images/formats/tall.jpg", to: directory, as: "src/trip/changed.png")
        let before = try moto.keys(bucket)
        #expect(before.count == 8)

        let dryRun = try prune(moto, ["s3://\(bucket)/site", "--sources", directory.url("src"), "--variant", Self.small])
        #expect(dryRun.status == 0, "\(dryRun.stderr)")
        #expect(
            dryRun.stdout.split(separator: "\n").map { String($0.prefix { $0 != ":" }) } == [
                "dropped-variant gone-big.jpg", "orphaned gone-small.webp", "dropped-variant keep-big.jpg",
                "dropped-variant trip/changed-big.jpg", "changed trip/changed-small.webp",
            ], "\(dryRun.stdout)")
        #expect(
            dryRun.stderr.contains(
                "1 outputs kept, 5 to delete (orphaned: 1, changed: 1, dropped variant: 3), left alone (made from other sources: 0, foreign: 1)"),
            "\(dryRun.stderr)")
        #expect(try moto.keys(bucket) == before, "a dry run deletes nothing")

        let deleted = try prune(moto, ["s3://\(bucket)/site", "--sources", directory.url("src"), "--variant", Self.small, "--delete"])
        #expect(deleted.status == 0, "\(deleted.stderr)")
        #expect(deleted.stderr.contains("1 outputs kept, 5 deleted"), "\(deleted.stderr)")
        #expect(try moto.keys(bucket) == ["outside/gone-small.webp", "site/foreign.txt", "site/keep-small.webp"])
    }

    /// Two folders write under one prefix, as quick start 1 does for each: a prune given one of them
    /// lists and deletes that folder's orphans only. Every output of the other folder stays, with
    /// its bytes, and is counted; so does one an older imagepipe wrote without recording where its
    /// original lay, which could be either folder's.
    @Test func aPruneGivenOneFolderDeletesNothingOfAnotherFolderWritingUnderTheSamePrefix() throws {
        let moto = try MotoServer.unsigned()
        let bucket = try moto.makeBucket()
        CommandRunner.copyFixture("images/formats/small-200x150.jpg", to: directory, as: "folderA/keep.jpg")
        CommandRunner.copyFixture("images/formats/small-400x300.jpg", to: directory, as: "folderA/gone.jpg")
        CommandRunner.copyFixture("images/formats/alpha.png", to: directory, as: "folderB/b1.png")
        CommandRunner.copyFixture("images/formats/grey.jpg", to: directory, as: "folderB/b2.jpg")
        CommandRunner.copyFixture("images/formats/tall.jpg", to: directory, as: "folderB/trip/b3.jpg")
        for folder in ["folderA", "folderB"] {
            let batch = try CommandRunner.run(
                [
                    "batch", directory.url(folder), "--dest", "s3://\(bucket)/photos", "--endpoint", moto.endpoint,
                    "--variant", Self.small, "--jobs", "1",
                ], environment: environment(moto))
            #expect(batch.status == 0, "\(batch.stderr)")
        }
        try moto.put(
            bucket, "photos/old-small.webp", size: 10, metadata: Self.origin(source: "old.jpg", sha256: String(repeating: "ab", count: 32)))
        try FileManager.default.removeItem(atPath: directory.url("folderA/gone.jpg"))
        let folderB = ["photos/b1-small.webp", "photos/b2-small.webp", "photos/trip/b3-small.webp"]
        let digests = try Dictionary(uniqueKeysWithValues: folderB.map { ($0, try #require(try moto.object(bucket, $0)).sha256) })

        let dryRun = try prune(moto, ["s3://\(bucket)/photos", "--sources", directory.url("folderA"), "--variant", Self.small])
        #expect(dryRun.status == 0, "\(dryRun.stderr)")
        #expect(dryRun.stdout == "orphaned gone-small.webp: 'gone.jpg' is not among the sources\n", "\(dryRun.stdout)")
        #expect(
            dryRun.stderr.contains(
                "1 outputs kept, 1 to delete (orphaned: 1, changed: 0, dropped variant: 0), left alone (made from other sources: 4, foreign: 0)"),
            "\(dryRun.stderr)")
        #expect(dryRun.stderr.contains("warning: 1 outputs record no place their original was read from"), "\(dryRun.stderr)")

        let deleted = try prune(moto, ["s3://\(bucket)/photos", "--sources", directory.url("folderA"), "--variant", Self.small, "--delete"])
        #expect(deleted.status == 0, "\(deleted.stderr)")
        #expect(try moto.keys(bucket) == (folderB + ["photos/keep-small.webp", "photos/old-small.webp"]).sorted())
        for key in folderB { #expect(try moto.object(bucket, key)?.sha256 == digests[key], "\(key) is untouched") }
    }

    /// More than one listing page and one DeleteObjects request (S3's 1000 keys each), every
    /// request signed and checked; the DeleteObjects bodies carry their Content-MD5.
    @Test func moreThanAThousandOrphansAreListedAndDeletedInBatches() throws {
        let moto = try MotoServer.signed()
        let bucket = try moto.makeBucket()
        directory.write("src/other.jpg", Fixtures.data("images/formats/tiny.png"))
        let tiny = Fixtures.path("images/formats/tiny.png")
        let orphans = try moto.fill(
            bucket, prefix: "o", count: 1005, files: [tiny],
            metadata: Self.origin(source: "vanished.jpg", sha256: String(repeating: "ab", count: 32), location: directory.url("src/vanished.jpg")))
        let foreign = try moto.fill(bucket, prefix: "f", count: 3, files: [tiny])
        let proxy = try FaultProxy(upstream: moto, plan: [])

        let output = try prune(
            moto, ["s3://\(bucket)", "--sources", directory.url("src"), "--variant", Self.small, "--delete"], endpoint: proxy.endpoint)

        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stdout.split(separator: "\n").count == orphans.count)
        #expect(
            output.stderr.contains(
                "0 outputs kept, 1005 deleted (orphaned: 1005, changed: 0, dropped variant: 0), left alone (made from other sources: 0, foreign: 3)"))
        #expect(try moto.keys(bucket) == foreign.sorted())
        let requests = proxy.entries()
        #expect(requests.filter { $0.path.contains("list-type=2") }.count == 2, "two listing pages")
        let deletions = requests.filter { $0.method == "POST" && $0.path.contains("delete") }
        #expect(deletions.count == 2, "1000 keys, then 5: \(deletions.map(\.path))")
        #expect(deletions.allSatisfy { $0.contentMD5 != nil })
        #expect(!requests.contains { $0.method == "DELETE" }, "no key removed on its own")
    }

    /// A small page size: the listing follows its continuation tokens and the deletions go in
    /// batches of that size, the last one short.
    @Test func aSmallPageSizeListsAndDeletesEveryPage() throws {
        let moto = try MotoServer.unsigned()
        let bucket = try moto.makeBucket()
        let kept = Fixtures.data("images/formats/tiny.png")
        directory.write("src/kept.png", kept)
        let tiny = Fixtures.path("images/formats/tiny.png")
        _ = try moto.fill(
            bucket, prefix: "site", count: 23, files: [tiny],
            metadata: Self.origin(
                source: "vanished.jpg", sha256: String(repeating: "cd", count: 32), location: directory.url("src/vanished.jpg")))
        try moto.put(
            bucket, "site/kept-small.webp", size: 10,
            metadata: Self.origin(source: "kept.png", sha256: kept.sha256, location: directory.url("src/kept.png")))
        try moto.put(bucket, "site/zz-foreign", size: 10)

        let listed = try prune(moto, ["s3://\(bucket)/site/", "--sources", directory.url("src"), "--variant", Self.small, "--page-size", "5"])
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(listed.stdout.split(separator: "\n").count == 23, "\(listed.stdout)")
        #expect(
            listed.stderr.contains(
                "1 outputs kept, 23 to delete (orphaned: 23, changed: 0, dropped variant: 0), left alone (made from other sources: 0, foreign: 1)"))

        let deleted = try prune(
            moto, ["s3://\(bucket)/site/", "--sources", directory.url("src"), "--variant", Self.small, "--page-size", "5", "--delete"])
        #expect(deleted.status == 0, "\(deleted.stderr)")
        #expect(try moto.keys(bucket) == ["site/kept-small.webp", "site/zz-foreign"])
    }

    /// An output whose name starts with a combining mark is judged and deleted under its own key:
    /// `site/` and the mark are one Character, and cut by characters it was `x.webp`, another object.
    @Test func anOutputWhoseNameStartsWithACombiningMarkIsDeletedUnderItsOwnKey() throws {
        let moto = try MotoServer.unsigned()
        let bucket = try moto.makeBucket()
        directory.write("src/kept.png", Fixtures.data("images/formats/tiny.png"))
        let orphan = Self.origin(
            source: "vanished.jpg", sha256: String(repeating: "cd", count: 32), location: directory.url("src/vanished.jpg"))
        try moto.put(bucket, "site/\u{301}x.webp", size: 10, metadata: orphan)
        try moto.put(bucket, "site/x.webp", size: 10)

        let deleted = try prune(moto, ["s3://\(bucket)/site/", "--sources", directory.url("src"), "--variant", Self.small, "--delete"])
        #expect(deleted.status == 0, "\(deleted.stderr)")
        #expect(deleted.stdout.contains("orphaned \u{301}x.webp: 'vanished.jpg' is not among the sources"), "\(deleted.stdout)")
        #expect(try moto.keys(bucket) == ["site/x.webp"], "the foreign x.webp stays")
    }

    /// A source that cannot be read (here: larger than --max-source-bytes) keeps its outputs, and
    /// `--delete` then deletes nothing at all; read, it judges them. Sources in S3 are named by URL.
    @Test func deleteRefusesWhileASourceCannotBeRead() throws {
        let moto = try MotoServer.unsigned()
        let bucket = try moto.makeBucket()
        try moto.put(bucket, "orig/big.jpg", size: 2000)
        try moto.put(bucket, "orig/still.jpg", file: Fixtures.path("images/formats/tiny.png"))
        let stillSHA = Fixtures.data("images/formats/tiny.png").sha256
        let made = String(repeating: "ef", count: 32)
        try moto.put(bucket, "site/big-small.webp", size: 10, metadata: Self.origin(source: "s3://\(bucket)/orig/big.jpg", sha256: made))
        try moto.put(bucket, "site/gone-small.webp", size: 10, metadata: Self.origin(source: "s3://\(bucket)/orig/gone.jpg", sha256: made))
        try moto.put(bucket, "site/still-small.webp", size: 10, metadata: Self.origin(source: "s3://\(bucket)/orig/still.jpg", sha256: stillSHA))
        let before = try moto.keys(bucket)

        let refused = try prune(
            moto, ["s3://\(bucket)/site", "--sources", "s3://\(bucket)/orig", "--variant", Self.small, "--max-source-bytes", "1000", "--delete"])

        #expect(refused.status == 1, "\(refused.stderr)")
        #expect(refused.stderr.contains("not deleting anything: the sources could not be read completely"), "\(refused.stderr)")
        #expect(refused.stderr.contains("s3://\(bucket)/orig/big.jpg is 2000 bytes"), "\(refused.stderr)")
        #expect(refused.stderr.contains("warning: big-small.webp kept:"), "\(refused.stderr)")
        #expect(try moto.keys(bucket) == before)

        let deleted = try prune(moto, ["s3://\(bucket)/site", "--sources", "s3://\(bucket)/orig", "--variant", Self.small, "--delete"])
        #expect(deleted.status == 0, "\(deleted.stderr)")
        #expect(
            deleted.stdout.split(separator: "\n").map { String($0.prefix { $0 != ":" }) } == ["changed big-small.webp", "orphaned gone-small.webp"])
        #expect(try moto.keys(bucket) == ["orig/big.jpg", "orig/still.jpg", "site/still-small.webp"])
    }

    /// A source folder in a bucket that lists nothing (a mistyped prefix), beside one that does,
    /// would make the outputs made from it look orphaned: `--delete` refuses, naming it.
    @Test func deleteRefusesWhenOneSourceFolderInABucketHoldsNothing() throws {
        let moto = try MotoServer.unsigned()
        let bucket = try moto.makeBucket()
        try moto.put(bucket, "orig/a.jpg", file: Fixtures.path("images/formats/tiny.png"))
        let made = String(repeating: "ef", count: 32)
        try moto.put(bucket, "site/b-small.webp", size: 10, metadata: Self.origin(source: "s3://\(bucket)/orig/b.jpg", sha256: made))
        let before = try moto.keys(bucket)

        let refused = try prune(
            moto, ["s3://\(bucket)/site", "--sources", "s3://\(bucket)/orig/", "s3://\(bucket)/orgi/", "--variant", Self.small, "--delete"])

        #expect(refused.status == 1, "\(refused.stderr)")
        #expect(refused.stderr.contains("a source folder holds no files (s3://\(bucket)/orgi/)"), "\(refused.stderr)")
        #expect(try moto.keys(bucket) == before)
    }

    /// A bucket that cannot be listed, the destination's or a source's, stops prune before anything is
    /// judged, as it stops batch: a configuration error, exit status 2, which the help gives.
    @Test func aBucketThatCannotBeListedIsAConfigurationError() throws {
        let moto = try MotoServer.unsigned()
        let bucket = try moto.makeBucket()
        try moto.put(bucket, "site/a-small.webp", size: 10, metadata: Self.origin(source: "a.jpg", sha256: String(repeating: "ab", count: 32)))
        directory.write("src/b.png", Fixtures.data("images/formats/tiny.png"))
        let missing = "gone-" + bucket

        let destination = try prune(moto, ["s3://\(missing)/site", "--sources", directory.url("src"), "--variant", Self.small])
        #expect(destination.status == 2, "\(destination.stderr)")
        #expect(destination.stderr.contains("bucket s3://\(missing) does not exist"), "\(destination.stderr)")

        let source = try prune(moto, ["s3://\(bucket)/site", "--sources", "s3://\(missing)/orig/", "--variant", Self.small, "--delete"])
        #expect(source.status == 2, "\(source.stderr)")
        #expect(source.stderr.contains("bucket s3://\(missing) does not exist"), "\(source.stderr)")
        #expect(try moto.keys(bucket) == ["site/a-small.webp"])

        let help = try CommandRunner.run(["prune", "--help"])
        let text = help.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(
            text.contains(
                "2 for usage or configuration errors, found before anything is judged: a destination that does not exist, "
                    + "a bucket that cannot be listed (missing, credentials refused, unreachable), as in batch"), "\(help.stdout)")
    }
}
