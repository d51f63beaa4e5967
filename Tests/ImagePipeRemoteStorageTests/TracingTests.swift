// Traces end to end: the real binary exports OTLP/HTTP to a receiver that decodes it with opentelemetry-proto, for a batch and a queue.
import Foundation
import ImagePipe
import ImagePipeRemoteStorage
import ImagePipeTestSupport
import Testing

/// What a user who sets OTEL_EXPORTER_OTLP_ENDPOINT sees: one trace per job (one per batch run,
/// with a span per original), each stage beneath its job span, the producer's context continued,
/// the notification carrying it on; and a collector that is down, slow or sampled off costing no job.
@Suite(.offThePool) struct TracingTests {
    let directory = TemporaryDirectory(prefix: "imagepipe-traces")
    /// The span of the request that queued the job (W3C's example).
    let producer = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    /// Two images (one small enough to share a helper's call), a file that is no image, a damaged JPEG.
    func makeSources(in folder: String) {
        directory.write(folder + "/a.jpg", Fixtures.data("images/formats/landscape.jpg"))
        directory.write(folder + "/b.png", Fixtures.data("images/formats/tiny.png"))
        directory.write(folder + "/notes.txt", Data("not an image at all\n".utf8))
        directory.write(folder + "/broken.jpg", Fixtures.data("hostile/truncated.jpg"))
    }

    /// Every span lies within its parent's time (a notification's POST after it) and names a parent
    /// that was exported (or one of `outside`).
    func expectWellFormed(_ spans: [TraceReceiver.ReceivedSpan], outside: Set<String> = []) {
        let byID = Dictionary(spans.map { ($0.spanID, $0) }, uniquingKeysWith: { first, _ in first })
        #expect(byID.count == spans.count, "span ids are unique")
        for span in spans {
            #expect(span.start > 0 && span.end >= span.start, "\(span.name) ends after it starts")
            guard !span.parentSpanID.isEmpty, !outside.contains(span.parentSpanID) else { continue }
            guard let parent = byID[span.parentSpanID] else {
                Issue.record("\(span.name)'s parent \(span.parentSpanID) was not exported")
                continue
            }
            #expect(parent.traceID == span.traceID)
            // A notification is sent once its job is recorded: after the job span, by design.
            if span.name == "POST" {
                #expect(span.start >= parent.end, "the notification follows the job's record")
                continue
            }
            // One millisecond of slack for the conversions of instants to nanoseconds.
            #expect(span.start + 1_000_000 >= parent.start && span.end <= parent.end + 1_000_000, "\(span.name) within \(parent.name)")
        }
    }

    @Test func aBatchIsOneTraceWithASpanPerOriginalAndEveryStageBeneathIt() async throws {
        let receiver = try TraceReceiver()
        makeSources(in: "src")
        let output = try CommandRunner.run(
            ["batch", directory.url("src"), "--dest", directory.url("out"), "--log-format", "json", "--log-level", "debug"],
            environment: receiver.environment.merging(["TRACEPARENT": producer, "HOME": directory.path]) { $1 })
        #expect(output.status == 1, "the damaged JPEG fails: \(output.stderr.suffix(2000))")
        let state = try receiver.state()
        #expect(state.errors.isEmpty, "the protocol's parser took every request: \(state.errors)")
        let spans = state.spans
        #expect(Set(spans.map(\.traceID)) == ["4bf92f3577b34da6a3ce929d0e0e4736"], "one trace, the caller's")
        #expect(spans.allSatisfy { $0.resource["service.name"] as? String == "imagepipe" })
        expectWellFormed(spans, outside: ["00f067aa0ba902b7"])
        let run = try #require(spans.first { $0.name == "batch" })
        #expect(run.parentSpanID == "00f067aa0ba902b7", "the run continues TRACEPARENT")
        #expect(run.int("imagepipe.done") == 2 && run.int("imagepipe.failed") == 1 && run.statusCode == 2)
        let images = Dictionary(spans.children(of: run).filter { $0.name == "image" }.map { ($0.string("imagepipe.source") ?? "", $0) }) { $1 }
        #expect(Set(images.keys) == ["a.jpg", "b.png", "notes.txt", "broken.jpg"], "a span per original")

        let a = try #require(images["a.jpg"])
        #expect(a.string("imagepipe.status") == "done" && a.int("imagepipe.variants") == 3 && (a.int("imagepipe.bytes_out") ?? 0) > 0)
        #expect(spans.childNames(of: a) == ["read source": 1, "check destination": 1, "compress": 1, "store": 3])
        let compress = try #require(spans.children(of: a).first { $0.name == "compress" })
        // The helper's steps, placed by the worker under the compression it waited for.
        let steps = spans.childNames(of: compress)
        #expect(steps["read header"] == 1 && steps["decode"] == 1 && steps["analyses"] == 1 && steps["encode"] == 3, "\(steps)")
        let variants = Set(spans.children(of: compress).compactMap { $0.string("imagepipe.variant") })
        #expect(variants == ["thumb", "medium", "large"], "each encode names its variant")
        #expect(spans.children(of: a).filter { $0.name == "store" }.allSatisfy { $0.kind == 3 && $0.string("imagepipe.key") != nil })

        let broken = try #require(images["broken.jpg"])
        #expect(broken.statusCode == 2 && broken.string("error.type") == "corrupt_image")
        #expect(spans.children(of: broken).first { $0.name == "compress" }?.statusCode == 2, "the failed stage says so")
        #expect(images["notes.txt"]?.string("imagepipe.skip_code") == "not_an_image")

        // The JSON log lines about a job name its trace and span.
        let lines = output.stderr.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        let failed = try #require(lines.first { $0["message"] as? String == "failed" })
        #expect(failed["trace_id"] as? String == broken.traceID && failed["span_id"] as? String == broken.spanID)
    }

    @Test func aQueuedJobContinuesItsProducersTraceAndItsNotificationCarriesIt() async throws {
        let receiver = try TraceReceiver()
        let queue = directory.url("queue")
        let notify = try NotifyReceiver(secret: "whsec-traces")
        directory.write("queue/inbox/a.jpg", Fixtures.data("images/formats/landscape.jpg"))
        directory.write("queue/inbox/a.jpg.options.json", Data("{\"traceparent\": \"\(producer)\"}".utf8))
        directory.write("queue/inbox/b.png", Fixtures.data("images/formats/tiny.png"))
        let output = try CommandRunner.run(
            [
                "watch", queue, "--dest", directory.url("out"), "--exit-when-empty", "--status-interval", "0", "--notify-url", notify.url,
                "--log-format", "json",
            ],
            environment: receiver.environment.merging(["IMAGEPIPE_NOTIFY_SECRET": "whsec-traces", "HOME": directory.path]) { $1 })
        #expect(output.status == 0, "\(output.stderr.suffix(2000))")
        let state = try receiver.state()
        #expect(state.errors.isEmpty, "\(state.errors)")
        let spans = state.spans
        expectWellFormed(spans, outside: ["00f067aa0ba902b7"])
        let jobs = Dictionary(spans.filter { $0.name == "process \(queue)" }.map { ($0.string("messaging.message.id") ?? "", $0) }) { $1 }
        let a = try #require(jobs["a.jpg"])
        #expect(a.traceID == "4bf92f3577b34da6a3ce929d0e0e4736" && a.parentSpanID == "00f067aa0ba902b7", "the producer's trace goes on")
        #expect(a.kind == 5 && a.string("messaging.operation.type") == "process" && a.int("imagepipe.attempt") == 1)
        let names = spans.childNames(of: a)
        #expect(names["claim"] == 1 && names["read source"] == 1 && names["compress"] == 1 && names["store"] == 3 && names["settle"] == 1, "\(names)")
        let b = try #require(jobs["b.png"])
        #expect(b.traceID != a.traceID && b.parentSpanID.isEmpty, "a job queued without one starts its own trace")

        // The notification POST joins the job's trace: its traceparent names the POST's own span,
        // a client span under the job span.
        let received = try notify.received()
        for job in [a, b] {
            let post = try #require(received.first { $0.job == job.string("messaging.message.id") })
            let header = try #require(post.traceparent.flatMap(TraceParent.init), "the POST carries traceparent")
            #expect(header.traceID.description == job.traceID)
            let span = try #require(spans.first { $0.spanID == header.spanID.description }, "the POST's span was exported")
            #expect(span.name == "POST" && span.kind == 3 && span.parentSpanID == job.spanID && span.int("http.response.status_code") == 200)
        }
        #expect(received.allSatisfy { $0.signatureOK })
    }

    @Test func aCollectorThatIsDownOrSlowNeverHoldsAJob() async throws {
        makeSources(in: "src")
        // Nothing listens: every request fails at once.
        let down = try CommandRunner.run(
            ["batch", directory.url("src"), "--dest", directory.url("out-down"), "--log-format", "json"],
            environment: ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:\(LoopbackHTTP.freePort())", "OTEL_BSP_SCHEDULE_DELAY": "200"])
        #expect(down.status == 1, "the damaged JPEG fails, the rest is done: \(down.stderr.suffix(2000))")
        let warnings = down.stderr.components(separatedBy: "spans not exported: the OTLP receiver did not take them; jobs go on").count - 1
        #expect(warnings == 1, "said once, not for every request: \(down.stderr.suffix(2000))")
        #expect(FileManager.default.fileExists(atPath: directory.url("out-down")))
        // A collector that takes every request and answers none for two minutes, with requests
        // allowed as long: the batch ends with its results, the spans given up at its stop, while
        // the first request is still held. A job that waited for any request would hold the run
        // past the two minutes, and the runner stops it at one.
        let slow = try TraceReceiver(hangSeconds: 120)
        let held = try CommandRunner.run(
            ["batch", directory.url("src"), "--dest", directory.url("out-slow"), "--manifest", directory.url("slow.jsonl"), "--log-format", "json"],
            environment: slow.environment.merging(["OTEL_EXPORTER_OTLP_TIMEOUT": "120000"]) { $1 }, timeout: .seconds(60))
        #expect(held.status == 1, "\(held.stderr.suffix(2000))")
        let records = try String(contentsOfFile: directory.url("slow.jsonl"), encoding: .utf8).split(separator: "\n")
        #expect(records.count == 4, "every original recorded")
        let state = try slow.state()
        #expect(state.requests >= 1 && state.spans.isEmpty, "the batch ended while its spans were still held: \(state.requests) requests")
        #expect(held.stderr.contains("spans not exported: the OTLP receiver did not take them before the stop"))
    }

    @Test func samplingOffExportsNothingAndLogsNoTrace() async throws {
        let receiver = try TraceReceiver()
        makeSources(in: "src")
        let output = try CommandRunner.run(
            ["batch", directory.url("src"), "--dest", directory.url("out"), "--log-format", "json"],
            environment: receiver.environment.merging(["OTEL_TRACES_SAMPLER": "always_off"]) { $1 })
        #expect(output.status == 1)
        #expect(try receiver.state().requests == 0, "nothing sent")
        #expect(output.stderr.contains("\"message\":\"failed\"") && !output.stderr.contains("trace_id"))
    }

    @Test func aTraceSettingImagepipeCannotUseStopsTheRunBeforeItStarts() async throws {
        makeSources(in: "src")
        let cases: [([String: String], String)] = [
            (["OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"], "'grpc' is not spoken"),
            (["OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_SAMPLER": "sometimes"], "'sometimes' is not a sampler"),
            (["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "collector:4318"], "is not an http:// or https:// URL"),
        ]
        for (environment, message) in cases {
            let output = try CommandRunner.run(["batch", directory.url("src"), "--dest", directory.url("out")], environment: environment)
            #expect(output.status == 2, "\(environment): \(output.stderr)")
            #expect(output.stderr.contains(message), "\(output.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: directory.url("out")), "nothing made")
    }
}
