import Foundation
import ImagePipe
import ImagePipeTestSupport
import Testing

/// `imagepipe bench --also-queue`: two `watch --exit-when-empty` workers on real PostgreSQL, timed
/// beside `batch` on the same corpus.
@Suite(.offThePool, .serialized, .requires(PostgresServer.tool))
struct BenchQueueTests {
    static let fixtures = Fixtures.root

    @Test func queueWorkersAreTimedBesideBatchAndDoTheSameJob() async throws {
        let fixture = try PostgresFixture()
        for (index, image) in ["images/formats/landscape.jpg", "images/exif-orientation/Landscape_6.jpg", "images/formats/tall.jpg"].enumerated() {
            _ = fixture.directory.write("corpus/\(index).jpg", try Data(contentsOf: URL(fileURLWithPath: Self.fixtures + "/" + image)))
        }
        let arguments = [
            "bench", fixture.directory.url("corpus"), "--runs", "2", "--json", "--work-dir", fixture.directory.url("work"),
            "--variant", "photo=400x400,jpeg,q80", "--variant", "thumb=64x64,webp,q70",
            "--also-queue", fixture.server.url(database: fixture.database),
        ]
        let output = try await offPool { try CommandRunner.run(arguments, environment: fixture.server.environment) }
        #expect(output.status == 0, "\(output.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any])
        let tools = try #require(report["tools"] as? [[String: Any]])
        #expect(tools.map { $0["name"] as? String } == ["imagepipe", "imagepipe watch ×2 (postgres)"])
        for tool in tools {
            let runs = try #require(tool["runs"] as? [[String: Any]])
            #expect(runs.count == 2 && runs.allSatisfy { $0["succeeded"] as? Bool == true }, "\(tool)")
        }
        // The same variants from the same decodes: the same bytes as batch's.
        let bytes = tools.compactMap { $0["output_bytes"] as? Int }
        #expect(bytes.count == 2 && bytes[0] > 0 && bytes[0] == bytes[1], "\(bytes)")
        // Each round queued the corpus into a queue of its own, and its workers worked it off.
        let queues = try fixture.sql("SELECT queue, state, count(*) FROM imagepipe.jobs GROUP BY 1, 2 ORDER BY 1").split(separator: "\n")
        #expect(queues.count == 2 && queues.allSatisfy { $0.hasPrefix("bench_") && $0.hasSuffix("|done|3") }, "\(queues)")
    }
}
