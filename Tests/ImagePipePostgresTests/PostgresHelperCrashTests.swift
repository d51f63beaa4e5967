import Foundation
#if canImport(Glibc)
import Glibc
#endif
import ImagePipe
import ImagePipeTestSupport
import Testing

/// An image helper killed mid-job under `imagepipe watch postgres://…`: the built binary, real
/// PostgreSQL, real signals.
@Suite(.offThePool, .serialized, .requires(PostgresServer.tool))
struct PostgresHelperCrashTests {
    func enqueue(_ images: [String: String], into fixture: PostgresFixture) throws {
        let paths = images.map { name, fixturePath in fixture.directory.write("src/" + name, Fixtures.data(fixturePath)) }
        let output = try CommandRunner.run(
            ["enqueue", fixture.server.url(database: fixture.database), "-"], environment: fixture.server.environment,
            input: Data(paths.joined(separator: "\n").utf8))
        #expect(output.status == 0, "\(output.stderr)")
    }

    @Test func aJobWhoseHelperIsKilledTwiceIsDiscardedAndEveryOtherJobIsDoneOnce() async throws {
        let fixture = try PostgresFixture()
        let worker = try WorkerProcess(
            [
                "watch", fixture.server.url(database: fixture.database), "--dest", fixture.directory.url("out"), "--jobs", "1",
                "--status-interval", "0", "--retry-delay", "0.1", "--max-attempts", "5", "--variant", ImageHelpers.longJob.variant,
            ], log: fixture.directory.url("worker.log"), environment: fixture.server.environment)
        defer { worker.send(SIGKILL) }
        try enqueue(["poison.jpg": ImageHelpers.longJob.fixture], into: fixture)
        // Its first attempt killed with SIGKILL, its retry with SIGSEGV, each found working through
        // /proc. Finding and killing happen on one thread off the cooperative pool: an await between
        // them could wait seconds for a pool thread that synchronous tests hold, and the job end
        // meanwhile. A killed helper may use CPU while the kernel tears it down, so it is never taken
        // for the next one, and the next kill waits until its worker has reaped it.
        let parent = worker.process.processIdentifier
        let kills: [String] = try await offPool {
            var killed: Set<pid_t> = []
            var kills: [String] = []
            for signal in [SIGKILL, SIGSEGV] {
                guard let helper = ImageHelpers.busy(of: parent, excluding: killed) else {
                    kills.append("no helper was found working for signal \(signal)")
                    break
                }
                let sent = Glibc.kill(helper, signal)
                killed.insert(helper)
                let reaped = eventually { ImageHelpers.status(helper).isEmpty }
                kills.append(
                    sent == 0 && reaped
                        ? "killed"
                        : "helper \(helper): signalled \(sent == 0), reaped \(reaped), now \(ImageHelpers.status(helper)["State"] ?? "gone"); "
                            + "the worker's helpers \(ImageHelpers.of(parent)), its threads \(ImageHelpers.threadStates(parent))")
            }
            return kills
        }
        #expect(kills == ["killed", "killed"], "\(kills): \(worker.log)")
        #expect(await eventually(seconds: 120) { ((try? fixture.states()) ?? [:])["failed"] == 1 }, "\(worker.log)")
        let row = try fixture.sql(
            "SELECT attempt, result->>'error_code', jsonb_array_length(errors), errors->0->>'error', errors->1->>'error' FROM imagepipe.jobs")
        let fields = row.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(fields.count == 5, "\(row)")
        if fields.count == 5 {
            #expect(fields[0] == "2" && fields[1] == "decoder_crashed" && fields[2] == "2", "two attempts, the second final: \(row)")
            #expect(fields[3].contains("SIGKILL") && fields[4].contains("SIGSEGV"), "each attempt names its signal: \(row)")
            #expect(fields[4].contains("poison.jpg"), "the reason names the source: \(row)")
        }

        try enqueue(["next-1.jpg": "images/formats/small-200x150.jpg", "next-2.jpg": "images/formats/grey.jpg"], into: fixture)
        #expect(await eventually(seconds: 120) { ((try? fixture.states()) ?? [:])["done"] == 2 }, "\(worker.log)")
        #expect(try fixture.sql("SELECT max(attempt) FROM imagepipe.jobs WHERE state = 'done'") == "1", "each done once")
        #expect(worker.log.contains("image helper ended"), "\(worker.log)")
        worker.send(SIGTERM)
        #expect(try await offPool { worker.waitForExit(seconds: 60) } == 0, "\(worker.log)")
    }
}
