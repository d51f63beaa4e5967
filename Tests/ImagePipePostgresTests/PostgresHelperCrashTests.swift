import Foundation
#if canImport(Glibc)
import Glibc
#endif
import ImagePipe
import ImagePipeTestSupport
import Testing

/// An image helper killed mid-job under `imagepipe watch postgres://…`: the built binary, real
/// PostgreSQL, real signals.
@Suite(.serialized, .requires(PostgresServer.tool))
struct PostgresHelperCrashTests {
    func enqueue(_ images: [String: String], into fixture: PostgresFixture) throws {
        let paths = images.map { name, fixturePath in fixture.directory.write("src/" + name, Fixtures.data(fixturePath)) }
        let output = try CommandRunner.run(
            ["enqueue", fixture.server.url(database: fixture.database), "-"], environment: fixture.server.environment,
            input: Data(paths.joined(separator: "\n").utf8))
        #expect(output.status == 0, "\(output.stderr)")
    }

    @Test func aJobWhoseHelperCrashesTwiceIsDiscardedAndEveryOtherJobIsDoneOnce() async throws {
        let fixture = try PostgresFixture()
        let worker = try WorkerProcess(
            [
                "watch", fixture.server.url(database: fixture.database), "--dest", fixture.directory.url("out"), "--jobs", "1",
                "--status-interval", "0", "--retry-delay", "0.1", "--max-attempts", "5", "--variant", "slow=900x900,avif,q50,effort=6",
            ], log: fixture.directory.url("worker.log"), environment: fixture.server.environment)
        defer { worker.send(SIGKILL) }
        try enqueue(["poison.jpg": "images/formats/landscape.jpg"], into: fixture)
        for kill in 1...2 {
            let helper = try #require(
                try await offPool { ImageHelpers.busy(of: worker.process.processIdentifier) }, "kill \(kill): \(worker.log)")
            Glibc.kill(helper, kill == 1 ? SIGKILL : SIGSEGV)
        }
        #expect(await eventually(seconds: 120) { ((try? fixture.states()) ?? [:])["discarded"] == 1 }, "\(worker.log)")
        let row = try fixture.sql(
            "SELECT attempt, result->>'error_code', jsonb_array_length(errors), errors->0->>'error_code', errors->1->>'error' FROM imagepipe.jobs")
        let fields = row.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(fields.count == 5 && fields[0] == "2" && fields[1] == "decoder_crashed" && fields[2] == "2", "\(row)")
        #expect(fields.count == 5 && fields[3] == "decoder_crashed" && fields[4].contains("SIGSEGV"), "\(row)")

        try enqueue(["next-1.jpg": "images/formats/small-200x150.jpg", "next-2.jpg": "images/formats/grey.jpg"], into: fixture)
        #expect(await eventually(seconds: 120) { ((try? fixture.states()) ?? [:])["done"] == 2 }, "\(worker.log)")
        #expect(try fixture.sql("SELECT max(attempt) FROM imagepipe.jobs WHERE state = 'done'") == "1", "each done once")
        worker.send(SIGTERM)
        #expect(try await offPool { worker.waitForExit(seconds: 60) } == 0, "\(worker.log)")
    }
}
