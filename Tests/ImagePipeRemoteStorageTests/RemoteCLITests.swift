import Foundation
import ImagePipe
import ImagePipeTestSupport
import ImagePipeVips
import ImagePipeVipsTestSupport
import Testing
import ImagePipeRemoteStorage

/// `imagepipe batch` into moto and the Supabase stand-in: the real binary, its flags and environment.
@Suite(.offThePool) struct RemoteCLITests {
    let directory = TemporaryDirectory()

    func makeSources() throws {
        directory.write("src/trip/tiny.png", Fixtures.data("images/formats/tiny.png"))
        directory.write("src/small.jpg", Fixtures.data("images/formats/small-200x150.jpg"))
    }

    func manifest() throws -> [String: [String: Any]] {
        let text = try String(contentsOfFile: directory.url("manifest.jsonl"), encoding: .utf8)
        let records = try text.split(separator: "\n").map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
        return Dictionary(uniqueKeysWithValues: records.map { ($0["source"] as! String, $0) })
    }

    @Test func aBatchIntoS3StoresEveryVariantWithItsHeaders() throws {
        let moto = try MotoServer.signed()
        let bucket = try moto.makeBucket()
        try makeSources()
        let output = try CommandRunner.run(
            [
                "batch", directory.url("src"), "--dest", "s3://\(bucket)/site", "--endpoint", moto.endpoint, "--region", "us-east-1",
                "--manifest", directory.url("manifest.jsonl"), "--cache-control", "public, max-age=600", "--with-original",
            ],
            environment: [
                "AWS_ACCESS_KEY_ID": moto.credentials.accessKeyID, "AWS_SECRET_ACCESS_KEY": moto.credentials.secretAccessKey,
                "HOME": directory.path,
            ])

        #expect(output.status == 0, "\(output.stderr)")
        #expect(
            try moto.keys(bucket) == [
                "site/small-large.jpg", "site/small-medium.webp", "site/small-original.jpg", "site/small-thumb.webp",
                "site/trip/tiny-large.jpg", "site/trip/tiny-medium.webp", "site/trip/tiny-original.png", "site/trip/tiny-thumb.webp",
            ])
        let records = try manifest()
        let tiny = try #require(records["trip/tiny.png"])
        #expect(tiny["status"] as? String == "done")
        let variants = try #require(tiny["variants"] as? [[String: Any]])
        #expect(variants.first?["url"] as? String == "\(moto.endpoint)/\(bucket)/site/trip/tiny-large.jpg")
        for variant in variants {
            let info = try #require(try moto.object(bucket, "site/" + (variant["key"] as! String), withBody: true))
            #expect(info.size == variant["bytes"] as? Int)
            #expect(info.contentType == (variant["format"] as? String == "jpeg" ? "image/jpeg" : "image/webp"))
            #expect(info.cacheControl == "public, max-age=600")
            let decoded = try VipsProbe.info(info.body)
            #expect(decoded.width == variant["width"] as? Int && decoded.height == variant["height"] as? Int)
            #expect(decoded.loader.hasPrefix(variant["format"] as? String == "jpeg" ? "jpegload" : "webpload"))
        }
        let original = try #require(try moto.object(bucket, "site/trip/tiny-original.png"))
        #expect(original.sha256 == (Fixtures.data("images/formats/tiny.png")).sha256)
        #expect(original.contentType == "image/png")
    }

    @Test func aWrongSecretStopsTheBatchBeforeAnythingIsDecodedWithExitStatus2() throws {
        let moto = try MotoServer.signed()
        let bucket = try moto.makeBucket()
        try makeSources()
        let secret = "not-the-secret-\(UUID().uuidString)"
        let output = try CommandRunner.run(
            ["batch", directory.url("src"), "--dest", "s3://\(bucket)", "--manifest", directory.url("manifest.jsonl")],
            environment: [
                "AWS_ACCESS_KEY_ID": moto.credentials.accessKeyID, "AWS_SECRET_ACCESS_KEY": secret,
                "AWS_ENDPOINT_URL_S3": moto.endpoint, "AWS_REGION": "us-east-1", "HOME": directory.path,
            ])

        #expect(output.status == 2, "\(output.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory.url("manifest.jsonl")), "a run that never started leaves no manifest")
        #expect(output.stderr.contains("access to bucket s3://\(bucket) is denied (403)"), "\(output.stderr)")
        #expect(!output.stderr.contains(" done, "), "no summary: the run stopped before the first image")
        #expect(!output.stderr.contains(secret) && !output.stdout.contains(secret))
        #expect(try moto.keys(bucket).isEmpty)
    }

    @Test func missingCredentialsAndMisplacedFlagsExitWithStatus2() throws {
        try makeSources()
        let noCredentials = try CommandRunner.run(
            ["batch", directory.url("src"), "--dest", "s3://bucket/x"],
            environment: ["HOME": directory.path])
        #expect(noCredentials.status == 2)
        #expect(noCredentials.stderr.contains("no AWS credentials"), "\(noCredentials.stderr)")

        let localWithEndpoint = try CommandRunner.run(
            ["batch", directory.url("src"), "--dest", directory.url("out"), "--endpoint", "http://127.0.0.1:1"],
            environment: ["HOME": directory.path])
        #expect(localWithEndpoint.status == 2)
        #expect(localWithEndpoint.stderr.contains("--endpoint applies only to s3://"))

        let noSupabaseURL = try CommandRunner.run(
            ["batch", directory.url("src"), "--dest", "supabase://bucket"],
            environment: ["HOME": directory.path])
        #expect(noSupabaseURL.status == 2)
        #expect(noSupabaseURL.stderr.contains("SUPABASE_URL is not set"))
    }

    @Test func helpNamesTheFlagsAndNoSecrets() throws {
        let help = try CommandRunner.run(["batch", "--help"], environment: ["AWS_SECRET_ACCESS_KEY": "s3cr3t-in-env"])
        for flag in ["--endpoint", "--region", "--public-base-url", "--cache-control", "--with-original", "s3://", "supabase://"] {
            #expect(help.stdout.contains(flag), "\(flag)")
        }
        #expect(!help.stdout.contains("s3cr3t-in-env"))
    }

    @Test func aBatchIntoSupabase() throws {
        let key = "service-\(UUID().uuidString)"
        let stub = try SupabaseStub(key: key)
        try makeSources()
        let output = try CommandRunner.run(
            [
                "batch", directory.url("src"), "--dest", "supabase://media/web", "--public-base-url", "https://cdn.example.com/",
                "--manifest", directory.url("manifest.jsonl"),
            ],
            environment: ["SUPABASE_URL": stub.url, "SUPABASE_SERVICE_ROLE_KEY": key])
        #expect(output.status == 0, "\(output.stderr)")
        #expect(
            try stub.state().objects.keys.sorted() == [
                "media/web/small-large.jpg", "media/web/small-medium.webp", "media/web/small-thumb.webp",
                "media/web/trip/tiny-large.jpg", "media/web/trip/tiny-medium.webp", "media/web/trip/tiny-thumb.webp",
            ])
        let variants = try #require(try manifest()["trip/tiny.png"]?["variants"] as? [[String: Any]])
        #expect(variants.first?["url"] as? String == "https://cdn.example.com/web/trip/tiny-large.jpg")
        #expect(!output.stderr.contains(key))
    }

    @Test func aReRunIntoS3SkipsEveryImageWithLookupsOnly() throws {
        let moto = try MotoServer.signed()
        let bucket = try moto.makeBucket()
        let proxy = try FaultProxy(upstream: moto, plan: [])
        try makeSources()
        let environment = [
            "AWS_ACCESS_KEY_ID": moto.credentials.accessKeyID, "AWS_SECRET_ACCESS_KEY": moto.credentials.secretAccessKey,
            "HOME": directory.path,
        ]
        let arguments = [
            "batch", directory.url("src"), "--dest", "s3://\(bucket)/site", "--endpoint", proxy.endpoint,
            "--region", "us-east-1", "--manifest", directory.url("manifest.jsonl"),
        ]
        #expect(try CommandRunner.run(arguments, environment: environment).status == 0)
        let firstRequests = proxy.entries().count

        let again = try CommandRunner.run(arguments, environment: environment)
        #expect(again.status == 0, "\(again.stderr)")
        let rerun = proxy.entries().dropFirst(firstRequests)
        #expect(
            rerun.map(\.method).sorted() == ["HEAD"] + Array(repeating: "HEAD", count: 6),
            "one probe and one lookup per output, no upload: \(rerun.map(\.method))")
        let records = try manifest()
        #expect(records.values.allSatisfy { $0["status"] as? String == "skipped" && $0["skip_code"] as? String == "up_to_date" })
        #expect((records["trip/tiny.png"]?["variants"] as? [[String: Any]])?.count == 3)
        // An edited photo is published by the next run (EditedPhotoS3Tests); another original is
        // never replaced (the storage contract, and S3OriginTests).
    }

    @Test func aMissingBucketStopsTheBatchWithExitStatus2() throws {
        let moto = try MotoServer.signed()
        try makeSources()
        let output = try CommandRunner.run(
            ["batch", directory.url("src"), "--dest", "s3://nobucket/web", "--endpoint", moto.endpoint],
            environment: [
                "AWS_ACCESS_KEY_ID": moto.credentials.accessKeyID, "AWS_SECRET_ACCESS_KEY": moto.credentials.secretAccessKey,
                "HOME": directory.path,
            ])
        #expect(output.status == 2)
        #expect(output.stderr.contains("bucket s3://nobucket does not exist at \(moto.endpoint)"), "\(output.stderr)")
    }

    @Test func aReRunIntoSupabaseSkipsAndAMissingBucketStopsIt() throws {
        let key = "service-\(UUID().uuidString)"
        let stub = try SupabaseStub(key: key)
        try makeSources()
        let environment = ["SUPABASE_URL": stub.url, "SUPABASE_SERVICE_ROLE_KEY": key]
        let arguments = ["batch", directory.url("src"), "--dest", "supabase://media/web", "--manifest", directory.url("manifest.jsonl")]
        #expect(try CommandRunner.run(arguments, environment: environment).status == 0)
        let stored = try stub.state().objects
        let metadata = try #require(stored["media/web/small-large.jpg"]?["metadata"] as? [String: String])
        #expect(metadata["imagepipe-source"] == "small.jpg" && metadata["imagepipe-sha256"]?.count == 64)

        let again = try CommandRunner.run(arguments, environment: environment)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try manifest().values.allSatisfy { $0["status"] as? String == "skipped" })
        let posts = try stub.state().requests.filter { $0["method"] as? String == "POST" }
        #expect(posts.count == 6, "no upload on the re-run")

        let missing = try CommandRunner.run(["batch", directory.url("src"), "--dest", "supabase://nobucket"], environment: environment)
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("bucket supabase://nobucket does not exist"), "\(missing.stderr)")
    }
}
