// A PostgreSQL job's trace continues the request that queued it: `enqueue --traceparent` or TRACEPARENT, stored in the job's options.
import Foundation
import ImagePipe
import ImagePipeTestSupport
import Testing

@Suite(.offThePool, .serialized, .requires(PostgresServer.tool))
struct PostgresTraceTests {
    /// Two producers' requests (one by the option, one by the environment, as a traced script
    /// passes it) and a job queued by SQL with none, run by a worker on another "machine": each
    /// job span is a consumer span whose parent is its producer's span, through the database.
    @Test func aJobSpanContinuesTheTraceOfTheRequestThatQueuedIt() async throws {
        let fixture = try PostgresFixture()
        let receiver = try TraceReceiver()
        let (url, environment) = (fixture.server.url(database: fixture.database), fixture.server.environment)
        let first = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        let second = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        let a = fixture.directory.write("src/a.jpg", Fixtures.data("images/formats/small-400x300.jpg"))
        let b = fixture.directory.write("src/b.jpg", Fixtures.data("images/formats/grey.jpg"))
        let c = fixture.directory.write("src/c.jpg", Fixtures.data("images/formats/tall.jpg"))
        let byOption = try await offPool { try CommandRunner.run(["enqueue", url, a, "--traceparent", first], environment: environment) }
        #expect(byOption.status == 0, "\(byOption.stderr)")
        let byEnvironment = try await offPool {
            try CommandRunner.run(["enqueue", url, b], environment: environment.merging(["TRACEPARENT": second]) { $1 })
        }
        #expect(byEnvironment.status == 0, "\(byEnvironment.stderr)")
        _ = try fixture.sql("SELECT imagepipe.enqueue('\(c)')")
        #expect(try fixture.sql("SELECT options->>'traceparent' FROM imagepipe.jobs ORDER BY id LIMIT 1") == first, "kept with the job")
        let refused = try await offPool { try CommandRunner.run(["enqueue", url, a, "--traceparent", "00-abc"], environment: environment) }
        #expect(refused.status != 0 && refused.stderr.contains("is not a W3C traceparent"), "\(refused.stderr)")

        let worker = try WorkerProcess(
            ["watch", url, "--dest", fixture.directory.url("out"), "--jobs", "1", "--status-interval", "0", "--exit-when-empty"],
            log: fixture.directory.url("worker.log"), environment: environment.merging(receiver.environment) { $1 })
        #expect(try await offPool { worker.waitForExit(seconds: 60) } == 0, "\(worker.log.suffix(2000))")
        let spans = try receiver.state().spans
        let jobs = Dictionary(spans.filter { $0.kind == 5 }.map { ($0.string("imagepipe.source") ?? "", $0) }) { $1 }
        #expect(jobs.count == 3, "\(spans.map(\.name))")
        for (source, parent) in [(a, first), (b, second)] {
            let span = try #require(jobs[source], "\(source): \(jobs.keys)")
            let producer = try #require(TraceParent(parent))
            #expect(span.traceID == producer.traceID.description && span.parentSpanID == producer.spanID.description, "\(source)")
            #expect(span.string("messaging.destination.name") != nil && span.string("imagepipe.status") == "done")
            let names = spans.childNames(of: span)
            #expect(names["claim"] == 1 && names["compress"] == 1 && names["settle"] == 1, "\(names)")
        }
        #expect(jobs[c]?.parentSpanID.isEmpty == true, "a job queued without a context is a trace's root")
    }
}
