// Hostile object keys queued in PostgreSQL: read by the key they have (not the one libcurl would squash them to), refused by a named reason when their output key would leave the destination.
import Foundation
import ImagePipe
import ImagePipeTestSupport
import Testing

/// A Supabase trigger queues whatever name an uploader chose. The built binary, real PostgreSQL,
/// moto (see `MotoS3` for why without signature checking): each queued key is read as it is (`..` segments are not squashed
/// on the way, which made these fail as `source_not_found`), and one whose output key would leave
/// or blur the destination goes to `discarded` with `invalid_key`; nothing lands outside the local
/// destination, which sits deep enough that a key climbing out of it would still land in the
/// fixture's folder.
@Suite(.offThePool, .serialized, .requires(PostgresServer.tool))
struct QueuedObjectNameTests {
    static let destination = "a/b/c/d/out"
    /// The queued keys of the report, each a different image so the bytes read tell which object was read.
    static let objects: [(key: String, fixture: String)] = [
        ("orig/./dot.jpg", "images/formats/grey.jpg"),
        ("orig/a/../../../escaped2.jpg", "images/formats/small-400x300.jpg"),
        ("orig/../../../../tmp/x/escaped.jpg", "images/formats/progressive.jpg"),
        ("orig/..%2F..%2Fescaped3.jpg", "images/formats/alpha-webp.webp"),
    ]

    /// Queues every object of a new bucket in a new database, runs a worker until the queue is
    /// empty, and returns each job's source, state, result code and source hash, with the hashes put.
    func run(_ extra: [String]) async throws -> (rows: [String: [String]], hashes: [String: String], fixture: PostgresFixture) {
        let moto = try MotoS3.shared()
        let bucket = try moto.makeBucket()
        var hashes: [String: String] = [:]
        for (key, fixture) in Self.objects {
            try moto.put(bucket, key, file: Fixtures.root + "/" + fixture)
            hashes["s3://\(bucket)/\(key)"] = SHA256Digest.hash(Fixtures.data(fixture)).hex
        }
        let fixture = try PostgresFixture()
        let url = fixture.server.url(database: fixture.database)
        let sources = Self.objects.map { "s3://\(bucket)/\($0.key)" }
        let environment = fixture.server.environment.merging(moto.environment) { $1 }.merging(["HOME": fixture.directory.path]) { $1 }
        let enqueued = try await offPool {
            try CommandRunner.run(["enqueue", url, "-"], environment: environment, input: Data(sources.joined(separator: "\n").utf8))
        }
        #expect(enqueued.status == 0, "\(enqueued.stderr)")

        let worker = try WorkerProcess(
            [
                "watch", url, "--dest", fixture.directory.url(Self.destination), "--endpoint", moto.endpoint, "--exit-when-empty",
                "--jobs", "1", "--uploads", "1", "--status-interval", "0", "--variant", "t=16x16,jpeg,q50",
            ] + extra,
            log: fixture.directory.url("worker.log"), environment: environment)
        #expect(try await offPool { worker.waitForExit(seconds: 60) } == 0, "\(worker.log)")
        var rows: [String: [String]] = [:]
        let table = try fixture.sql("SELECT source, state, coalesce(result->>'error_code', '-'), result->>'sha256' FROM imagepipe.jobs")
        for line in table.split(separator: "\n") {
            let fields = line.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
            rows[fields[0]] = Array(fields.dropFirst())
        }
        #expect(rows.count == sources.count, "\(table)")
        return (rows, hashes, fixture)
    }

    /// Every file in the fixture's folder but the worker's log and the destination's.
    func outsideTheDestination(_ fixture: PostgresFixture) -> [String] {
        fixture.directory.files().filter { !$0.hasPrefix(Self.destination + "/") && !$0.hasSuffix(".log") }
    }

    @Test func queuedHostileKeysAreReadAsTheyAreAndRefusedByNameWhenTheirKeysWouldLeaveTheDestination() async throws {
        let (rows, hashes, fixture) = try await run([])
        for key in ["orig/./dot.jpg", "orig/a/../../../escaped2.jpg", "orig/../../../../tmp/x/escaped.jpg"] {
            let source = try #require(hashes.keys.first { $0.hasSuffix("/" + key) })
            // The hash shows the object of that very key was read before its output key was refused.
            #expect(rows[source] == ["failed", "invalid_key", hashes[source]!], "\(source): \(rows[source] ?? [])")
        }
        let escaped3 = try #require(hashes.keys.first { $0.hasSuffix("/orig/..%2F..%2Fescaped3.jpg") })
        #expect(rows[escaped3] == ["done", "-", hashes[escaped3]!], "\(rows)")
        #expect(fixture.directory.files(under: Self.destination) == ["orig/..%2F..%2Fescaped3-t.jpg"])
        #expect(outsideTheDestination(fixture) == [], "nothing was written outside the destination")
    }

    @Test func withKeysMadeFromTheContentEveryQueuedHostileKeyIsDone() async throws {
        let (rows, hashes, fixture) = try await run(["--key", "{hash}/{variant}.{ext}"])
        for (source, hash) in hashes {
            #expect(rows[source] == ["done", "-", hash], "\(source): \(rows[source] ?? [])")
        }
        #expect(fixture.directory.files(under: Self.destination) == hashes.values.map { String($0.prefix(16)) + "/t.jpg" }.sorted())
        #expect(outsideTheDestination(fixture) == [], "nothing was written outside the destination")
    }
}
