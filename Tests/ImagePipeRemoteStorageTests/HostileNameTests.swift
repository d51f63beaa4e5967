// Object keys strangers chose (`.`/`..` and empty segments, percent escapes, control characters, a leading slash), batched from moto into a local destination.
import Foundation
import ImagePipe
import ImagePipeRemoteStorage
import ImagePipeTestSupport
import Testing

/// `imagepipe batch` over a bucket whose keys are hostile: every object is read by the key it really
/// has (on moto without signature checking: its check refuses every request for a key with `.` or
/// `..` segments, boto3's own included; `SigV4TestSuiteTests` checks how such paths are signed), none is
/// left out unsaid, and no output lands outside the local destination, which sits deep enough that
/// a key climbing out of it would still land inside this test's folder, where it would be seen.
@Suite(.offThePool) struct HostileNameTests {
    let directory = TemporaryDirectory(prefix: "imagepipe-names")
    /// Four levels down, so `orig/../../../../tmp/x/...` resolved from it stays in `directory`.
    static let destination = "a/b/c/d/out"

    /// The six objects of the report: two plain ones and four hostile keys, each a different image,
    /// so the bytes read tell which object was read.
    static let objects: [(key: String, fixture: String)] = [
        ("orig/a.jpg", "images/formats/small-200x150.jpg"),
        ("orig/b.png", "images/formats/tiny.png"),
        ("orig/./dot.jpg", "images/formats/grey.jpg"),
        ("orig/a/../../../escaped2.jpg", "images/formats/small-400x300.jpg"),
        ("orig/../../../../tmp/x/escaped.jpg", "images/formats/progressive.jpg"),
        ("orig/..%2F..%2Fescaped3.jpg", "images/formats/alpha-webp.webp"),
    ]

    func environment(_ moto: MotoServer) -> [String: String] {
        [
            "AWS_ACCESS_KEY_ID": moto.credentials.accessKeyID, "AWS_SECRET_ACCESS_KEY": moto.credentials.secretAccessKey,
            "AWS_REGION": "us-east-1", "HOME": directory.path,
        ]
    }

    func manifest(_ name: String) throws -> [String: [String: Any]] {
        let text = try String(contentsOfFile: directory.url(name), encoding: .utf8)
        let records = try text.split(separator: "\n").map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
        return Dictionary(uniqueKeysWithValues: records.map { ($0["source"] as! String, $0) })
    }

    /// Fills a new bucket with `objects`; returns it with each key's SHA-256.
    func bucket(_ moto: MotoServer, _ objects: [(key: String, fixture: String)]) throws -> (String, [String: String]) {
        let bucket = try moto.makeBucket()
        var hashes: [String: String] = [:]
        for (key, fixture) in objects {
            try moto.put(bucket, key, file: Fixtures.root + "/" + fixture)
            hashes[key] = Fixtures.data(fixture).sha256
        }
        #expect(try moto.keys(bucket) == objects.map(\.key).sorted(), "moto holds every key as given")
        return (bucket, hashes)
    }

    func batch(_ moto: MotoServer, _ arguments: [String], manifest: String) throws -> CommandRunner.Output {
        try CommandRunner.run(
            arguments + [
                "--dest", directory.url(Self.destination), "--endpoint", moto.endpoint, "--variant", "t=16x16,jpeg,q50",
                "--manifest", directory.url(manifest),
            ],
            environment: environment(moto))
    }

    /// Every file this test's folder holds apart from the manifests, the list and the destination's.
    func filesOutsideTheDestination() -> [String] {
        directory.files().filter { !$0.hasPrefix(Self.destination + "/") && !$0.hasSuffix(".jsonl") && !$0.hasSuffix(".txt") }
    }

    @Test func theReportedKeysAreReadAsTheyAreAndNoneEscapesALocalDestination() throws {
        let moto = try MotoServer.unsigned()
        let (bucket, hashes) = try bucket(moto, Self.objects)
        // The hidden one, named in a list: a name given is read whatever it starts with.
        let list = directory.write("list.txt", "s3://\(bucket)/orig/..%2F..%2Fescaped3.jpg\n")

        // Keys made from the names: the three whose keys would leave or blur the destination fail,
        // each by the stable code and naming its source, after the object was read by its own key.
        let named = try batch(moto, ["batch", "s3://\(bucket)", "--from", list], manifest: "named.jsonl")
        #expect(named.status == 1, "\(named.stderr)")
        #expect(named.stderr.contains("imagepipe: 3 done, 3 failed, 1 hidden left out in"), "\(named.stderr)")
        let records = try manifest("named.jsonl")
        for key in ["orig/./dot.jpg", "orig/a/../../../escaped2.jpg", "orig/../../../../tmp/x/escaped.jpg"] {
            let record = try #require(records["s3://\(bucket)/\(key)"], "\(records.keys.sorted())")
            #expect(record["status"] as? String == "failed" && record["error_code"] as? String == "invalid_key", "\(record)")
            #expect(record["sha256"] as? String == hashes[key], "\(key): the object of that very key was read")
            #expect(TextLog.hasLine(named.stderr, "error", "failed", ["source": "s3://\(bucket)/\(key)", "error_code": "invalid_key"]))
        }
        #expect((records["s3://\(bucket)/orig/./dot.jpg"]?["error"] as? String)?.contains("empty or '.' path segment") == true)
        #expect((records["s3://\(bucket)/orig/a/../../../escaped2.jpg"]?["error"] as? String)?.contains("'..' would escape") == true)
        let listed = try #require(records["s3://\(bucket)/orig/..%2F..%2Fescaped3.jpg"])
        #expect(listed["status"] as? String == "done" && listed["sha256"] as? String == hashes["orig/..%2F..%2Fescaped3.jpg"])
        #expect(
            directory.files(under: Self.destination)
                == ["..%2F..%2Fescaped3-t.jpg", "orig/a-t.jpg", "orig/b-t.jpg"], "the escapes stay characters of one name")

        // Keys made from the content alone: every object is an image like any other.
        let hashed = try batch(moto, ["batch", "s3://\(bucket)", "--key", "{hash}/{variant}.{ext}"], manifest: "hashed.jsonl")
        #expect(hashed.status == 0, "\(hashed.stderr)")
        #expect(hashed.stderr.contains("imagepipe: 5 done, 0 failed, 1 hidden left out in"), "\(hashed.stderr)")
        let byHash = try manifest("hashed.jsonl")
        for (key, _) in Self.objects where key != "orig/..%2F..%2Fescaped3.jpg" {
            let record = try #require(byHash["s3://\(bucket)/\(key)"], "\(byHash.keys.sorted())")
            #expect(record["status"] as? String == "done" && record["sha256"] as? String == hashes[key], "\(key): \(record)")
            let variant = try #require((record["variants"] as? [[String: Any]])?.first?["key"] as? String)
            #expect(variant == String(hashes[key]!.prefix(16)) + "/t.jpg")
        }
        #expect(byHash["s3://\(bucket)/orig/..%2F..%2Fescaped3.jpg"] == nil, "hidden in a listing")
        #expect(filesOutsideTheDestination() == [], "nothing was written outside the destination")
    }

    @Test func emptySegmentsALeadingSlashEscapesAndControlCharactersAreReadAndNeverCleanedUp() throws {
        let moto = try MotoServer.unsigned()
        let objects = [
            ("orig//double.jpg", "images/formats/small-200x150.jpg"), ("/lead.jpg", "images/formats/grey.jpg"),
            ("orig/ctl\u{1}.jpg", "images/formats/small-400x300.jpg"), ("orig/%2e%2e/pct.jpg", "images/formats/progressive.jpg"),
            ("orig/double.jpg", "images/formats/tiny.png"),
        ]
        let (bucket, hashes) = try bucket(moto, objects)

        let named = try batch(moto, ["batch", "s3://\(bucket)"], manifest: "named.jsonl")
        #expect(named.status == 1, "\(named.stderr)")
        #expect(named.stderr.contains("imagepipe: 2 done, 3 failed in"), "\(named.stderr)")
        let records = try manifest("named.jsonl")
        let reasons = [
            "orig//double.jpg": "empty or '.' path segment", "/lead.jpg": "absolute keys would escape the destination",
            "orig/ctl\u{1}.jpg": "contains the control character U+0001",
        ]
        for (key, reason) in reasons {
            let record = try #require(records["s3://\(bucket)/\(key)"], "\(records.keys.sorted())")
            #expect(record["error_code"] as? String == "invalid_key" && record["sha256"] as? String == hashes[key], "\(record)")
            #expect((record["error"] as? String)?.contains(reason) == true, "\(record)")
        }
        #expect(!named.stderr.contains("\u{1}"), "the control character is escaped in the log")
        // `orig//double.jpg` did not become `orig/double.jpg`'s output, and `%2e%2e` is no `..`.
        #expect(directory.files(under: Self.destination) == ["orig/%2e%2e/pct-t.jpg", "orig/double-t.jpg"])
        #expect(records["s3://\(bucket)/orig/double.jpg"]?["sha256"] as? String == hashes["orig/double.jpg"])

        let hashed = try batch(moto, ["batch", "s3://\(bucket)", "--key", "{hash}/{variant}.{ext}"], manifest: "hashed.jsonl")
        #expect(hashed.status == 0, "\(hashed.stderr)")
        let byHash = try manifest("hashed.jsonl")
        for (key, _) in objects {
            #expect(byHash["s3://\(bucket)/\(key)"]?["sha256"] as? String == hashes[key], "\(key)")
        }
        #expect(filesOutsideTheDestination() == [], "nothing was written outside the destination")
    }
}
