// An edited photo in a library batched into S3 (moto): the Cache-Control that follows the key, and what a plain run, --update and {hash} keys do.
import Foundation
import ImagePipe
import ImagePipeRemoteStorage
import ImagePipeTestSupport
import Testing

/// Quick start 1 run again after a photo was edited: the real binary against moto, every object
/// checked with boto3.
@Suite(.offThePool) struct EditedPhotoS3Tests {
    let directory = TemporaryDirectory()
    static let edited = "images/formats/landscape.jpg"

    func environment(_ moto: MotoServer) -> [String: String] {
        [
            "AWS_ACCESS_KEY_ID": moto.credentials.accessKeyID, "AWS_SECRET_ACCESS_KEY": moto.credentials.secretAccessKey,
            "AWS_REGION": "us-east-1", "HOME": directory.path,
        ]
    }

    func makeSources() {
        CommandRunner.copyFixture("images/formats/small-200x150.jpg", to: directory, as: "src/small.jpg")
        CommandRunner.copyFixture("images/formats/tiny.png", to: directory, as: "src/trip/tiny.png")
    }

    func batch(_ moto: MotoServer, _ bucket: String, _ extra: [String] = []) throws -> CommandRunner.Output {
        try CommandRunner.run(
            [
                "batch", directory.url("src"), "--dest", "s3://\(bucket)/site", "--endpoint", moto.endpoint,
                "--manifest", directory.url("manifest.jsonl"),
            ] + extra, environment: environment(moto))
    }

    func record(_ source: String) throws -> [String: Any] {
        let text = try String(contentsOfFile: directory.url("manifest.jsonl"), encoding: .utf8)
        let records = try text.split(separator: "\n").map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
        return try #require(records.first { $0["source"] as? String == source })
    }

    static let smallKeys = ["site/small-large.jpg", "site/small-medium.webp", "site/small-thumb.webp"]

    /// Keys from names are stored to be revalidated, so the plain next run publishes the edit under
    /// the same URLs, exits 0 and records each replacement.
    @Test func aPlainRunReplacesAnEditedPhotoStoredToBeRevalidated() throws {
        let moto = try MotoServer.signed()
        let bucket = try moto.makeBucket()
        makeSources()
        let first = try batch(moto, bucket)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(!first.stderr.contains("immutable"), "\(first.stderr)")
        for key in try moto.keys(bucket) {
            #expect(try moto.object(bucket, key)?.cacheControl == "public, no-cache", "\(key)")
        }
        let tiny = try #require(try moto.object(bucket, "site/trip/tiny-large.jpg"))

        CommandRunner.copyFixture(Self.edited, to: directory, as: "src/small.jpg")
        let again = try batch(moto, bucket)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stderr.contains("1 done, 0 failed, 1 skipped"), "\(again.stderr)")
        #expect(again.stderr.contains("replacing an output of a changed original"), "\(again.stderr)")
        #expect(!again.stderr.contains("immutable"), "\(again.stderr)")
        let editedSHA = Fixtures.data(Self.edited).sha256
        for key in Self.smallKeys {
            let object = try #require(try moto.object(bucket, key))
            #expect(object.metadata["imagepipe-sha256"] == editedSHA, "\(key) is made from the edited photo")
            #expect(object.cacheControl == "public, no-cache", "\(key)")
        }
        let variants = try #require(try record("small.jpg")["variants"] as? [[String: Any]])
        #expect(variants.count == 3 && variants.allSatisfy { $0["replaced"] as? String == "earlier_version" }, "\(variants)")
        #expect(try moto.object(bucket, "site/trip/tiny-large.jpg") == tiny, "the photo that did not change is untouched")
    }

    /// An object served as immutable (every object of an earlier imagepipe; here, one stored with an
    /// explicit --cache-control) keeps its bytes through a plain run, which fails the edited photo
    /// saying why; --update replaces it and warns, naming the key.
    @Test func anObjectServedAsImmutableIsReplacedOnlyByUpdateWithAWarning() throws {
        let moto = try MotoServer.signed()
        let bucket = try moto.makeBucket()
        makeSources()
        let legacy = try batch(moto, bucket, ["--cache-control", CacheControl.immutable])
        #expect(legacy.status == 0, "\(legacy.stderr)")
        #expect(
            legacy.stderr.components(separatedBy: "says immutable, but --key '{dir}/{stem}-{variant}.{ext}' has no {hash}").count == 2,
            "warned once, at the start: \(legacy.stderr)")
        let served = try #require(try moto.object(bucket, "site/small-large.jpg"))
        #expect(served.cacheControl == CacheControl.immutable)

        CommandRunner.copyFixture(Self.edited, to: directory, as: "src/small.jpg")
        let plain = try batch(moto, bucket)
        #expect(plain.status == 1, "\(plain.stderr)")
        let failed = try record("small.jpg")
        #expect(failed["error_code"] as? String == "key_collision")
        let reason = failed["error"] as? String ?? ""
        #expect(reason.contains("that URL was served as immutable (Cache-Control: public, max-age=31536000, immutable)"), "\(reason)")
        #expect(reason.contains("browsers and CDNs may keep showing the old picture for up to a year"), "\(reason)")
        #expect(reason.contains("--key '{dir}/{stem}-{hash}-{variant}.{ext}'") && reason.contains("--update"), "\(reason)")
        #expect(try moto.object(bucket, "site/small-large.jpg") == served, "the immutable URL keeps its bytes")

        let updated = try batch(moto, bucket, ["--update"])
        #expect(updated.status == 0, "\(updated.stderr)")
        for key in Self.smallKeys {
            let name = String(key.dropFirst("site/".count))
            #expect(updated.stderr.contains("replacing '\(name)', which was served as immutable"), "\(updated.stderr)")
            let object = try #require(try moto.object(bucket, key))
            #expect(object.metadata["imagepipe-sha256"] == Fixtures.data(Self.edited).sha256)
            #expect(object.cacheControl == "public, no-cache", "stored from now on to be revalidated")
        }
    }

    /// A key from the content can never hold other bytes: it is stored immutable, and nothing is warned of.
    @Test func aHashKeyIsStoredImmutable() throws {
        let moto = try MotoServer.signed()
        let bucket = try moto.makeBucket()
        makeSources()
        let output = try batch(moto, bucket, ["--key", "{dir}/{stem}-{hash}-{variant}.{ext}"])
        #expect(output.status == 0, "\(output.stderr)")
        #expect(!output.stderr.contains("warning"), "\(output.stderr)")
        let keys = try moto.keys(bucket)
        #expect(keys.count == 6)
        for key in keys {
            #expect(try moto.object(bucket, key)?.cacheControl == "public, max-age=31536000, immutable", "\(key)")
        }
    }
}
