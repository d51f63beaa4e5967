// A focal point queued with a PostgreSQL job: `imagepipe enqueue --focus` or the options a producer writes, kept by cover crops.
import Foundation
import ImagePipe
import ImagePipeTestSupport
import ImagePipeVipsTestSupport
import Testing

@Suite(.offThePool, .serialized, .requires(PostgresServer.tool))
struct PostgresFocusTests {
    /// One photo, its subject near the right edge (see SubjectImage), queued three times: with a
    /// point on the subject by `enqueue --focus`, with one far from it by a producer's own SQL (which
    /// wins over the variant's `attention`, which would find the subject), and with an unusable one.
    @Test func theQueuedFocalPointWinsAndABadOneFailsItsJobAlone() async throws {
        let fixture = try PostgresFixture()
        let bytes = try SubjectImage.png(width: 1200, height: 600, subjectAt: 1060, 255)
        let (url, environment) = (fixture.server.url(database: fixture.database), fixture.server.environment)
        let near = fixture.directory.write("src/near.png", bytes)
        let far = fixture.directory.write("src/far.png", bytes)
        let bad = fixture.directory.write("src/bad.png", bytes)
        let enqueued = try await offPool { try CommandRunner.run(["enqueue", url, near, "--focus", "0.92,0.5"], environment: environment) }
        #expect(enqueued.status == 0, "\(enqueued.stderr)")
        _ = try fixture.sql("SELECT imagepipe.enqueue('\(far)', options => '{\"focus\": [0.05, 0.5], \"later\": 1}')")
        _ = try fixture.sql("SELECT imagepipe.enqueue('\(bad)', options => '{\"focus\": [1.5, 0.5]}')")
        #expect(try fixture.sql("SELECT options->'focus' FROM imagepipe.jobs ORDER BY id LIMIT 1") == "[0.92, 0.5]")

        let refused = try await offPool { try CommandRunner.run(["enqueue", url, near, "--focus", "0.5"], environment: environment) }
        #expect(refused.status != 0 && refused.stderr.contains("--focus '0.5' must be X,Y"), "\(refused.stderr)")

        let worker = try WorkerProcess(
            [
                "watch", url, "--dest", fixture.directory.url("out"), "--jobs", "1", "--status-interval", "0",
                "--variant", "t=200x200,png,cover,attention", "--exit-when-empty",
            ],
            log: fixture.directory.url("worker.log"), environment: environment)
        #expect(try await offPool { worker.waitForExit(seconds: 60) } == 0, "\(worker.log.suffix(2000))")

        let rows = try fixture.sql(
            "SELECT state, coalesce(result->>'error_code', ''), coalesce(result->>'error', '') FROM imagepipe.jobs ORDER BY id"
        ).split(separator: "\n").map { $0.split(separator: "|", omittingEmptySubsequences: false).map(String.init) }
        #expect(rows.count == 3 && rows[0][0] == "done" && rows[1][0] == "done", "\(rows)")
        #expect(rows.last?[0] == "failed" && rows.last?[1] == "invalid_job_options", "\(rows)")
        #expect(rows.last?[2].contains("[1.5,0.5]") == true, "the reason shows the value: \(rows)")
        let kept = try VipsProbe.colouredPixels(Data(contentsOf: URL(fileURLWithPath: fixture.directory.url("out/near-t.png"))))
        let lost = try VipsProbe.colouredPixels(Data(contentsOf: URL(fileURLWithPath: fixture.directory.url("out/far-t.png"))))
        #expect(kept > 600 && lost == 0, "near \(kept), far \(lost)")
    }
}
