import Foundation
import ImagePipe
import ImagePipeRemoteStorage
import ImagePipeTestSupport
import ImagePipeVipsTestSupport
import Testing

/// `imagepipe batch` reading its sources from moto (signature checking on) and the Supabase stand-in.
@Suite(.offThePool) struct RemoteSourceCLITests {
    let directory = TemporaryDirectory(prefix: "imagepipe-sources")

    func environment(_ moto: MotoServer) -> [String: String] {
        [
            "AWS_ACCESS_KEY_ID": moto.credentials.accessKeyID, "AWS_SECRET_ACCESS_KEY": moto.credentials.secretAccessKey,
            "AWS_REGION": "us-east-1", "HOME": directory.path,
        ]
    }

    func manifest() throws -> [String: [String: Any]] {
        let text = try String(contentsOfFile: directory.url("manifest.jsonl"), encoding: .utf8)
        let records = try text.split(separator: "\n").map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
        return Dictionary(uniqueKeysWithValues: records.map { ($0["source"] as! String, $0) })
    }

    /// Every file under `folder`, relative to it.
    func files(_ folder: String) -> [String] {
        let enumerator = FileManager.default.enumerator(atPath: folder)
        return (enumerator?.allObjects as? [String] ?? []).filter { !$0.hasSuffix("/") && !isDirectory(folder + "/" + $0) }.sorted()
    }

    func isDirectory(_ path: String) -> Bool {
        var directory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &directory) && directory.boolValue
    }

    @Test func aBatchOverABucketOf1500ObjectsAndAFolderProducesEveryOutput() throws {
        let moto = try MotoServer.signed()
        let bucket = try moto.makeBucket()
        let fixtures = ["tiny.png", "small-200x150.jpg"].map { Fixtures.root + "/images/formats/" + $0 }
        let keys = try moto.fill(bucket, prefix: "many", count: 1_500, files: fixtures)
        try moto.put(bucket, "many/notes.txt", size: 10)
        directory.write("local/extra.jpg", Fixtures.data("images/formats/small-200x150.jpg"))
        let proxy = try FaultProxy(upstream: moto, plan: [])

        let output = try CommandRunner.run(
            [
                "batch", "s3://\(bucket)", directory.url("local"), "--dest", directory.url("out"), "--endpoint", proxy.endpoint,
                "--variant", "t=16x16,jpeg,q50", "--manifest", directory.url("manifest.jsonl"), "--jobs", "2", "--uploads", "8",
            ],
            environment: environment(moto))

        #expect(output.status == 0, "\(output.stderr.suffix(2000))")
        #expect(output.stderr.contains("imagepipe: 1501 done, 0 failed, 1 skipped (1 not_an_image)"), "\(output.stderr.suffix(500))")
        // many/d00/00000-tiny.png gives many/d00/00000-tiny-t.jpg (both fixtures' extensions have 3 letters).
        let expected = (keys.map { String($0.dropLast(4)) + "-t.jpg" } + ["extra-t.jpg"]).sorted()
        #expect(files(directory.url("out")) == expected)

        let records = try manifest()
        let sample = try #require(records["s3://\(bucket)/\(keys[1])"])
        #expect(sample["status"] as? String == "done")
        #expect(sample["source_etag"] as? String == Digests.md5(try Data(contentsOf: URL(fileURLWithPath: fixtures[1]))).hexString)
        #expect((sample["variants"] as? [[String: Any]])?.first?["key"] as? String == String(keys[1].dropLast(4)) + "-t.jpg")
        #expect(records["s3://\(bucket)/many/notes.txt"]?["skip_code"] as? String == "not_an_image")
        #expect(records["extra.jpg"]?["status"] as? String == "done" && records["extra.jpg"]?["source_etag"] == nil)

        let requests = proxy.entries()
        #expect(requests.filter { $0.path.contains("list-type=2") }.count == 2, "the listing came in two pages")
        // notes.txt too: its first bytes decide, from the same download.
        #expect(requests.filter { $0.method == "GET" && !$0.path.contains("list-type=2") }.count == 1_501, "each object downloaded once")
    }

    /// One photo, its subject near the right edge (see SubjectImage), uploaded four times: with a
    /// focal point on the subject in its metadata, with one far from it, with none (a centred crop,
    /// which misses the subject), and with one that is no point (which fails that image alone).
    @Test func anObjectsMetadataFocalPointPlacesItsCoverCrops() throws {
        let moto = try MotoServer.signed()
        let bucket = try moto.makeBucket()
        let photo = directory.write("subject.png", try SubjectImage.png(width: 1200, height: 600, subjectAt: 1060, 255))
        try moto.put(bucket, "orig/near.png", file: photo, metadata: ["focus": "0.92,0.5"])
        try moto.put(bucket, "orig/far.png", file: photo, metadata: ["focus": "0.05,0.5"])
        try moto.put(bucket, "orig/plain.png", file: photo)
        try moto.put(bucket, "orig/bad.png", file: photo, metadata: ["focus": "1.5,0.5"])
        // What is no image is skipped as such, whatever its metadata says.
        try moto.put(bucket, "orig/notes.txt", file: directory.write("notes.txt", "notes\n"), metadata: ["focus": "1.5,0.5"])
        let output = try CommandRunner.run(
            [
                "batch", "s3://\(bucket)", "--dest", directory.url("out"), "--endpoint", moto.endpoint,
                "--variant", "t=200x200,png,cover", "--manifest", directory.url("manifest.jsonl"),
            ],
            environment: environment(moto))
        #expect(output.status == 1, "bad.png fails: \(output.stderr)")
        func coloured(_ name: String) throws -> Int {
            try VipsProbe.colouredPixels(Data(contentsOf: URL(fileURLWithPath: directory.url("out/orig/\(name)-t.png"))))
        }
        let (near, far, plain) = (try coloured("near"), try coloured("far"), try coloured("plain"))
        #expect(near > 600 && far == 0 && plain == 0, "near \(near), far \(far), plain \(plain)")
        let bad = try #require(try manifest()["s3://\(bucket)/orig/bad.png"])
        #expect(bad["error_code"] as? String == "invalid_job_options", "\(bad)")
        #expect((bad["error"] as? String)?.contains("focus='1.5,0.5' is no focal point") == true, "\(bad)")
        #expect(try manifest()["s3://\(bucket)/orig/notes.txt"]?["skip_code"] as? String == "not_an_image")
    }

    @Test func anObjectWithoutAnExtensionIsTakenByItsBytesFromItsOneDownload() throws {
        let moto = try MotoServer.signed()
        let bucket = try moto.makeBucket()
        let jpeg = Fixtures.root + "/images/formats/small-200x150.jpg"
        try moto.put(bucket, "uploads/3f2a9c1e", file: jpeg)
        try moto.put(bucket, "uploads/u/42/upload.dat", file: jpeg)
        try moto.put(bucket, "uploads/notes.txt", file: directory.write("notes.txt", "just some notes\n"))
        try moto.put(bucket, "uploads/x.jpg", file: directory.write("x.jpg", "not a jpeg\n"))
        let proxy = try FaultProxy(upstream: moto, plan: [])

        let output = try CommandRunner.run(
            [
                // The whole bucket: moto's signature check gets a listed prefix's slash wrong (see S3SourceTests).
                "batch", "s3://\(bucket)", "--dest", directory.url("out"), "--endpoint", proxy.endpoint,
                "--variant", "t=16x16,jpeg,q50", "--manifest", directory.url("manifest.jsonl"),
            ],
            environment: environment(moto))

        #expect(output.status == 0, "\(output.stderr)")
        #expect(files(directory.url("out")) == ["uploads/3f2a9c1e-t.jpg", "uploads/u/42/upload-t.jpg"])
        let records = try manifest()
        #expect(records["s3://\(bucket)/uploads/3f2a9c1e"]?["status"] as? String == "done")
        #expect(records["s3://\(bucket)/uploads/3f2a9c1e"]?["format"] as? String == "jpeg")
        #expect(records["s3://\(bucket)/uploads/u/42/upload.dat"]?["status"] as? String == "done")
        #expect(records["s3://\(bucket)/uploads/notes.txt"]?["skip_code"] as? String == "not_an_image")
        // A key that promises an image changes nothing: its bytes are none, so it is skipped as notes.txt is.
        #expect(records["s3://\(bucket)/uploads/x.jpg"]?["skip_code"] as? String == "not_an_image")
        #expect(records["s3://\(bucket)/uploads/x.jpg"]?["reason"] as? String == records["s3://\(bucket)/uploads/notes.txt"]?["reason"] as? String)
        #expect(output.stderr.contains("imagepipe: 2 done, 0 failed, 2 skipped (2 not_an_image)"), "\(output.stderr)")
        let gets = proxy.entries().filter { $0.method == "GET" && !$0.path.contains("list-type=2") }.map(\.path)
        #expect(gets.count == 4, "each object is downloaded once, its first bytes judged from that download: \(gets)")
    }

    @Test func aMissingObjectFailsAsThatSourceAndAnOverSizeOneIsRefusedUnread() throws {
        let moto = try MotoServer.signed()
        let bucket = try moto.makeBucket()
        try moto.put(bucket, "photos/ok.jpg", file: Fixtures.root + "/images/formats/small-200x150.jpg")
        try moto.put(bucket, "photos/huge.jpg", size: 3_000_000)
        let list = directory.write("list.txt", "s3://\(bucket)/photos/gone.jpg\n")
        let proxy = try FaultProxy(upstream: moto, plan: [])

        let output = try CommandRunner.run(
            [
                "batch", "s3://\(bucket)", "--from", list, "--dest", directory.url("out"), "--endpoint", proxy.endpoint,
                "--max-source-bytes", "1000000", "--manifest", directory.url("manifest.jsonl"),
            ],
            environment: environment(moto))

        #expect(output.status == 1, "\(output.stderr)")
        let records = try manifest()
        #expect(records["s3://\(bucket)/photos/ok.jpg"]?["status"] as? String == "done")
        let gone = try #require(records["s3://\(bucket)/photos/gone.jpg"])
        #expect(gone["error_code"] as? String == "source_not_found" && gone["transient"] as? Bool == false)
        let huge = try #require(records["s3://\(bucket)/photos/huge.jpg"])
        #expect(huge["error_code"] as? String == "image_too_large")
        #expect((huge["error"] as? String)?.contains("is 3000000 bytes, more than the 1000000 bytes --max-source-bytes allows") == true)
        let gets = proxy.entries().filter { $0.method == "GET" }.map(\.path)
        #expect(!gets.contains { $0.hasSuffix("/huge.jpg") }, "no GET for the over-size object: \(gets)")
        #expect(gets.contains { $0.hasSuffix("/ok.jpg") } && gets.contains { $0.hasSuffix("/gone.jpg") })
        #expect(output.stderr.contains(#"error="s3://\#(bucket)/photos/gone.jpg does not exist"#), "\(output.stderr)")
        #expect(
            TextLog.hasLine(output.stderr, "error", "failed", ["source": "s3://\(bucket)/photos/gone.jpg", "error_code": "source_not_found"]),
            "\(output.stderr)")
    }

    @Test func aSourceBucketThatCannotBeReadStopsTheBatchWithStatus2BeforeTheDestinationIsMade() throws {
        let moto = try MotoServer.signed()
        let bucket = try moto.makeBucket()
        func run(_ source: String, secret: String? = nil, on server: MotoServer? = nil) throws -> CommandRunner.Output {
            var environment = environment(server ?? moto)
            if let secret { environment["AWS_SECRET_ACCESS_KEY"] = secret }
            return try CommandRunner.run(
                ["batch", source, "--dest", directory.url("out"), "--endpoint", (server ?? moto).endpoint],
                environment: environment)
        }
        let missing = try run("s3://no-such-bucket")
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("bucket s3://no-such-bucket does not exist at \(moto.endpoint)"), "\(missing.stderr)")
        let refused = try run("s3://\(bucket)", secret: "not-the-secret")
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("access to bucket s3://\(bucket) is denied (403)"), "\(refused.stderr)")
        // Neither an object nor a folder; this lists the prefix nothing.jpg/, whose slash moto's signature
        // check gets wrong (see S3SourceTests), so against moto without it.
        let unsigned = try MotoServer.unsigned()
        let nothing = try run("s3://\(try unsigned.makeBucket())/nothing.jpg", on: unsigned)
        #expect(nothing.status == 2)
        #expect(nothing.stderr.contains("/nothing.jpg does not exist: no such object, and no objects under"), "\(nothing.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory.url("out")), "nothing was created")
    }

    @Test func aBatchFromSupabaseFoldersAndASingleObject() throws {
        let key = "service-\(UUID().uuidString)"
        let stub = try SupabaseStub(key: key)
        let jpeg = Fixtures.data("images/formats/small-200x150.jpg")
        let etag = try stub.seed(jpeg, key: "uploads/2024/trip/beach.jpg")
        try stub.seed(Fixtures.data("images/formats/tiny.png"), key: "uploads/tiny.png", contentType: "image/png")
        try stub.seed(Data("x".utf8), key: "uploads/readme.md", contentType: "text/markdown")
        try stub.seed(jpeg, key: "elsewhere/one.jpg")

        let output = try CommandRunner.run(
            [
                "batch", "supabase://media/uploads/", "supabase://media/elsewhere/one.jpg", "--dest", directory.url("out"),
                "--variant", "t=16x16,webp,q50", "--manifest", directory.url("manifest.jsonl"),
            ],
            environment: ["SUPABASE_URL": stub.url, "SUPABASE_SERVICE_ROLE_KEY": key])

        #expect(output.status == 0, "\(output.stderr)")
        #expect(files(directory.url("out")) == ["2024/trip/beach-t.webp", "one-t.webp", "tiny-t.webp"])
        let records = try manifest()
        #expect(records["supabase://media/uploads/2024/trip/beach.jpg"]?["source_etag"] as? String == etag)
        #expect(records["supabase://media/uploads/readme.md"]?["skip_code"] as? String == "not_an_image")
        #expect(!output.stderr.contains(key))
    }
}
