// Object names strangers chose (`.`/`..` and empty segments, percent escapes, a control character, hidden names), batched from the Supabase stand-in.
import Foundation
import ImagePipe
import ImagePipeRemoteStorage
import ImagePipeTestSupport
import Testing

/// `imagepipe batch supabase://media/orig` over objects whose names are hostile, the Supabase
/// counterpart of `HostileNameTests`: every object is listed and read by the name it really has
/// (the stand-in decodes each request's path and answers the object stored under exactly that
/// name, so a squashed `..` or a mis-encoded `%` reads another object or none), none is left out
/// unsaid, and no output lands outside the local destination, which sits deep enough that a key
/// climbing out of it would still land inside this test's folder, where it would be seen.
///
/// Real Supabase Storage refuses object names holding `%` or a control character when they are
/// uploaded (its key check allows letters, digits, `/` and a few punctuation marks), so
/// `..%2F..%2Fescaped3.jpg`, `%2e%2e/pct.jpg` and `ctl\u{1}.jpg` exist only in the stand-in, which
/// stores any name; they are kept to show imagepipe reads whatever name a listing gives it, and
/// sends `%` escaped (`%2e%2e` sent as it is would be read as `..`).
@Suite(.offThePool) struct HostileSupabaseNameTests {
    let directory = TemporaryDirectory(prefix: "imagepipe-supabase-names")
    let key = "service-\(UUID().uuidString)"
    /// Four levels down, so `../../../../tmp/x/...` resolved from it stays in `directory`.
    static let destination = "a/b/c/d/out"

    /// The names, each a different image, so the bytes read tell which object was read.
    static let objects: [(key: String, fixture: String)] = [
        ("orig/ok.jpg", "images/formats/small-200x150.jpg"),
        ("orig/./dot.jpg", "images/formats/grey.jpg"),
        ("orig/a/../../../escaped2.jpg", "images/formats/small-400x300.jpg"),
        ("orig/../../../../tmp/x/escaped.jpg", "images/formats/progressive.jpg"),
        ("orig/..%2F..%2Fescaped3.jpg", "images/formats/tiny.png"),
        ("orig/.hidden.jpg", "images/formats/alpha-webp.webp"),
        ("orig//double.jpg", "images/formats/landscape.jpg"),
        ("orig/ctl\u{1}.jpg", "images/formats/tall.jpg"),
        ("orig/%2e%2e/pct.jpg", "images/formats/cmyk.jpg"),
    ]
    static let hidden: Set = ["orig/..%2F..%2Fescaped3.jpg", "orig/.hidden.jpg"]
    /// What the default template makes of each name that is not hidden, and why the key is refused
    /// (nil: a key inside the destination).
    static let refusals: [String: String?] = [
        "orig/ok.jpg": nil, "orig/./dot.jpg": "empty or '.' path segment",
        "orig/a/../../../escaped2.jpg": "'..' would escape the destination",
        "orig/../../../../tmp/x/escaped.jpg": "'..' would escape the destination",
        "orig//double.jpg": "absolute keys would escape the destination",
        "orig/ctl\u{1}.jpg": "contains the control character U+0001", "orig/%2e%2e/pct.jpg": nil,
    ]

    func source(_ name: String) -> String { "supabase://media/\(name)" }

    func manifest(_ name: String) throws -> [String: [String: Any]] {
        let text = try String(contentsOfFile: directory.url(name), encoding: .utf8)
        let records = try text.split(separator: "\n").map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
        return Dictionary(uniqueKeysWithValues: records.map { ($0["source"] as! String, $0) })
    }

    func batch(_ stub: SupabaseStub, _ arguments: [String], manifest: String) throws -> CommandRunner.Output {
        try CommandRunner.run(
            ["batch", "supabase://media/orig"] + arguments + [
                "--dest", directory.url(Self.destination), "--variant", "t=16x16,jpeg,q50", "--manifest", directory.url(manifest),
            ],
            environment: ["SUPABASE_URL": stub.url, "SUPABASE_SERVICE_ROLE_KEY": key, "HOME": directory.path])
    }

    /// The paths of the object reads (`GET .../object/authenticated/...`) the stand-in received, as sent.
    func reads(_ stub: SupabaseStub) throws -> [String] {
        try stub.state().requests.compactMap { request in
            guard request["method"] as? String == "GET", let path = request["path"] as? String,
                path.hasPrefix("/storage/v1/object/authenticated/")
            else { return nil }
            return path
        }
    }

    /// Every file this test's folder holds apart from the manifests and the destination's.
    func filesOutsideTheDestination() -> [String] {
        directory.files().filter { !$0.hasPrefix(Self.destination + "/") && !$0.hasSuffix(".jsonl") }
    }

    @Test func everyNameIsReadByItsOwnRequestRefusedKeysAreNamedAndNoneEscapesTheDestination() throws {
        let stub = try SupabaseStub(key: key)
        var hashes: [String: String] = [:]
        for (name, fixture) in Self.objects {
            try stub.seed(Fixtures.data(fixture), key: name)
            hashes[name] = Fixtures.data(fixture).sha256
        }
        let stored = try stub.state().objects
        #expect(stored.keys.sorted() == Self.objects.map { "media/" + $0.key }.sorted(), "the stand-in holds every name as given")
        #expect(Set(hashes.values).count == Self.objects.count, "every object has bytes of its own")
        for (name, hash) in hashes { #expect(stored["media/" + name]?["sha256"] as? String == hash, "\(name)") }
        let shown = Self.objects.map(\.key).filter { !Self.hidden.contains($0) }
        // Each object read names it, encoded as Supabase's API wants: `.` and `..` sent as they are,
        // `%` and the control character escaped, so `..%2F` stays three characters and no slash.
        let expectedReads = shown.map { "/storage/v1/object/authenticated/media/" + PercentEncoding.encodePath($0) }.sorted()
        #expect(expectedReads.contains("/storage/v1/object/authenticated/media/orig/ctl%01.jpg"))

        // Keys made from the names: every one that would leave or blur the destination fails, each
        // by the stable code and its reason, naming its source, after that very object was read.
        let named = try batch(stub, [], manifest: "named.jsonl")
        #expect(named.status == 1, "\(named.stderr)")
        #expect(named.stderr.contains("imagepipe: 2 done, 5 failed, 2 hidden left out in"), "\(named.stderr)")
        #expect(!named.stderr.contains("\u{1}"), "the control character is escaped in the log")
        let records = try manifest("named.jsonl")
        #expect(records.keys.sorted() == shown.map(source).sorted(), "every name not hidden has its record")
        for (name, reason) in Self.refusals {
            let record = try #require(records[source(name)], "\(records.keys.sorted())")
            #expect(record["sha256"] as? String == hashes[name], "\(name): the object of that very name was read")
            guard let reason else {
                #expect(record["status"] as? String == "done", "\(record)")
                continue
            }
            #expect(record["status"] as? String == "failed" && record["error_code"] as? String == "invalid_key", "\(record)")
            #expect((record["error"] as? String)?.contains(reason) == true, "\(name): \(record)")
            if !name.contains("\u{1}") {
                #expect(TextLog.hasLine(named.stderr, "error", "failed", ["source": source(name), "error_code": "invalid_key"]), "\(name)")
            }
        }
        #expect(directory.files(under: Self.destination) == ["%2e%2e/pct-t.jpg", "ok-t.jpg"], "`%2e%2e` is no `..`")
        // Each folder listed once, by its own prefix: `orig//` is the folder with the empty name.
        let prefixes = try stub.listings().compactMap { $0["prefix"] as? String }
        #expect(
            prefixes.sorted()
                == [
                    "orig/", "orig//", "orig/../", "orig/../../", "orig/../../../", "orig/../../../../", "orig/../../../../tmp/",
                    "orig/../../../../tmp/x/", "orig/./", "orig/%2e%2e/", "orig/a/", "orig/a/../", "orig/a/../../", "orig/a/../../../",
                ].sorted(), "\(prefixes)")
        #expect(try reads(stub).sorted() == expectedReads, "one read of each object by its own name, none of a hidden one")

        // Keys made from the content alone: every name not hidden is an image like any other.
        let hashed = try batch(stub, ["--key", "{hash}/{variant}.{ext}"], manifest: "hashed.jsonl")
        #expect(hashed.status == 0, "\(hashed.stderr)")
        #expect(hashed.stderr.contains("imagepipe: 7 done, 0 failed, 2 hidden left out in"), "\(hashed.stderr)")
        let byHash = try manifest("hashed.jsonl")
        #expect(byHash.keys.sorted() == shown.map(source).sorted(), "hidden names are left out of the listing")
        for name in shown {
            let record = try #require(byHash[source(name)], "\(byHash.keys.sorted())")
            #expect(record["status"] as? String == "done" && record["sha256"] as? String == hashes[name], "\(name): \(record)")
            let variant = try #require((record["variants"] as? [[String: Any]])?.first?["key"] as? String)
            #expect(variant == String(hashes[name]!.prefix(16)) + "/t.jpg", "\(name)")
        }
        #expect(try reads(stub).sorted() == (expectedReads + expectedReads).sorted(), "the second run read each one again")
        #expect(filesOutsideTheDestination() == [], "nothing was written outside the destination")
    }
}
