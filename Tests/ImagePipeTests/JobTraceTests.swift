// A job's trace context on every hop: W3C traceparent values, the sampler, and a job through the pipeline's lanes keeping its trace.
import Foundation
import ImagePipe
import ImagePipeTestKit
import ImagePipeTestSupport
import Logging
import Synchronization
import Testing

/// A sink that keeps what it is given.
final class RecordingSink: SpanSink {
    private let spans = Mutex<[Span]>([])
    func record(_ spans: [Span]) { self.spans.withLock { $0 += spans } }
    var recorded: [Span] { spans.withLock { $0 } }
}

@Suite struct JobTraceTests {
    let directory = TemporaryDirectory()
    /// The producer's span a queued job names (W3C's own example).
    let producer = TraceParent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")!

    @Test func traceparentIsReadAndWrittenAsW3CTraceContextSays() throws {
        #expect(producer.traceID.description == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(producer.spanID.description == "00f067aa0ba902b7")
        #expect(producer.sampled)
        #expect(producer.description == "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
        #expect(TraceParent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")?.sampled == false)
        // Flags other than sampled are kept out of the decision; a later version is read by its first fields.
        #expect(TraceParent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03")?.sampled == true)
        #expect(TraceParent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-comes-later") != nil)
        for bad in [
            "", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",  // no flags
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01",  // upper case
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  // no trace
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",  // no span
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  // the forbidden version
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",  // version 00 ends there
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",  // a later version's next field starts with '-'
            "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01", "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
        ] {
            #expect(TraceParent(bad) == nil, "\(bad)")
        }
        let random = TraceParent(traceID: .random(), spanID: .random(), sampled: true)
        #expect(TraceParent(random.description) == random, "what imagepipe writes it reads back")
    }

    @Test func idsNeverRepeatWithinAProcessAndAreNeverZero() {
        // Far past the counter's wrap: it starts anywhere in 64 bits and steps by 0.62 of them.
        let spans = (0..<200_000).map { _ in SpanID.random().value }
        #expect(Set(spans).count == spans.count && !spans.contains(0))
        let traces = (0..<50_000).map { _ in TraceID.random() }
        #expect(Set(traces).count == traces.count)
        #expect(Set(traces.map(\.low)).count > 49_000, "the halves are not one counter's neighbours")
    }

    @Test func theSamplerDecidesByTheTraceSoEveryProcessAgrees() {
        let ids = (0..<4000).map { _ in TraceID.random() }
        let half = ids.filter { Tracer.Sampler.ratio(0.5).samples($0, parent: nil) }.count
        #expect((1600...2400).contains(half), "about half of 4000: \(half)")
        #expect(ids.allSatisfy { Tracer.Sampler.ratio(0.5).samples($0, parent: nil) == Tracer.Sampler.ratio(0.5).samples($0, parent: nil) })
        #expect(ids.allSatisfy { !Tracer.Sampler.ratio(0).samples($0, parent: nil) && Tracer.Sampler.ratio(1).samples($0, parent: nil) })
        // A parent-based sampler follows the producer, whatever its own root would say.
        let unsampled = TraceParent(traceID: ids[0], spanID: .random(), sampled: false)
        let sampled = TraceParent(traceID: ids[0], spanID: .random(), sampled: true)
        #expect(!Tracer.Sampler.parentBased(root: .alwaysOn).samples(ids[0], parent: unsampled))
        #expect(Tracer.Sampler.parentBased(root: .alwaysOff).samples(ids[0], parent: sampled))
        #expect(!Tracer.Sampler.parentBased(root: .alwaysOff).samples(ids[0], parent: nil))
        #expect(!Tracer.Sampler.alwaysOff.samples(ids[0], parent: sampled))
    }

    /// Jobs, half of them queued with the producer's context, small enough for the pipeline to
    /// compress in batches (one lane's call for several) beside those compressed alone.
    func jobs(_ count: Int) -> [Job] {
        (0..<count).map { index in
            let bytes = ScriptedCompressor.image(index % 3 == 0 ? String(repeating: "large \(index) ", count: 200) : "small \(index)")
            var job = Job(path: directory.write("src/\(index).jpg", bytes), relativePath: "\(index).jpg")
            if index % 2 == 0 { job.traceParent = producer }
            return job
        }
    }

    @Test func aJobKeepsItsTraceAcrossEveryLaneOfThePipeline() async throws {
        let sink = RecordingSink()
        var configuration = FileHandler.Configuration()
        configuration.tracer = Tracer(sink: sink)
        // Held: the first call waits until the small jobs behind it are in the backlog, so they are
        // compressed in one batched call, whatever the machine's load.
        let compressor = ScriptedCompressor(held: true, batching: CompressionBatching(sources: 4, sourceBytes: 256, totalBytes: 1 << 20))
        let pipeline = JobPipeline(
            handler: FileHandler(compressor: compressor, storage: InMemoryStorage(delay: .milliseconds(1)), configuration: configuration),
            limits: .init(jobs: 1, uploads: 3))
        let running = Task { try await pipeline.runAll(jobs(12)) }
        #expect(await eventually(seconds: 60) { compressor.runningCalls == 1 && pipeline.waitingForCompression >= 2 })
        for _ in 0..<12 { compressor.letOneThrough() }
        let results = try await running.value
        #expect(results.count == 12 && results.allSatisfy { $0.status == .done })
        #expect(compressor.batches.contains { $0.count > 1 }, "some jobs went through a batched call: \(compressor.batches)")
        for result in results {
            let index = Int(result.source.dropLast(4))!
            // The hand-off from the pipeline's submit to its transfer lane, to a compression lane
            // (alone or in a batch), to the puts on the transfer lane and to the result: each one
            // that dropped the context leaves its stage's spans out, or the trace itself.
            let trace = try #require(result.trace, "\(result.source) lost its trace")
            if index % 2 == 0 {
                #expect(trace.traceID == producer.traceID && trace.parent == producer.spanID, "continues the producer's trace")
            } else {
                #expect(trace.traceID != producer.traceID && trace.parent == nil, "a trace of its own")
            }
            let byName = Dictionary(grouping: trace.spans, by: \.name)
            #expect(byName["read source"]?.count == 1 && byName["check destination"]?.count == 1, "\(result.source): inspection")
            #expect(byName["compress"]?.count == 1, "\(result.source): the compression lane")
            #expect(byName["store"]?.count == 3, "\(result.source): every put, each on its transfer lane")
            let compress = try #require(byName["compress"]?.first)
            #expect(byName["decode"]?.first?.parent == compress.spanID, "the compressor's steps under the compression")
            #expect(byName["encode"]?.count == 3 && byName["encode"]!.allSatisfy { $0.parent == compress.spanID })
            for span in trace.spans {
                #expect(span.traceID == trace.traceID, "\(result.source): \(span.name) in the job's trace")
                #expect(span.start <= span.end)
                #expect(span.start >= WallClock.nanos(at: trace.start), "\(span.name) starts within the job")
            }
            for name in ["read source", "check destination", "compress", "store"] {
                #expect(byName[name]!.allSatisfy { $0.parent == trace.spanID }, "\(name) is a child of the job span")
            }
            // The notice and the log lines carry the job span on.
            let notice = JobNotice(event: .done, job: result.source, result: result)
            #expect(notice.traceparent == "00-\(trace.traceID)-\(trace.spanID)-01")
            #expect(result.logMetadata["trace_id"] == .string(trace.traceID.description))
            #expect(result.logMetadata["span_id"] == .string(trace.spanID.description))
            #expect(try JSONDecoder().decode(JobNotice.self, from: notice.body()).traceparent == notice.traceparent, "kept with the notice")
        }
        #expect(sink.recorded.isEmpty, "nothing is exported before whoever settles the job ends its span")
    }

    @Test func aJobWhoseProducerDidNotSampleItOrAPipelineWithoutATracerTracesNothing() async throws {
        let sink = RecordingSink()
        var configuration = FileHandler.Configuration()
        configuration.tracer = Tracer(sink: sink)
        let handler = FileHandler(compressor: ScriptedCompressor(), storage: InMemoryStorage(), configuration: configuration)
        var job = Job(path: directory.write("src/a.jpg", ScriptedCompressor.image()), relativePath: "a.jpg")
        job.traceParent = TraceParent(traceID: producer.traceID, spanID: producer.spanID, sampled: false)
        let unsampled = try await handler.run(job)
        #expect(unsampled.status == .done && unsampled.trace == nil && unsampled.logMetadata["trace_id"] == nil)
        #expect(JobNotice(event: .done, job: "a.jpg", result: unsampled).traceparent == nil)
        let untraced = try await FileHandler(compressor: ScriptedCompressor(), storage: InMemoryStorage()).run(job)
        #expect(untraced.status == .done && untraced.trace == nil)
    }

    @Test func theStageAJobFailedInCarriesTheError() async throws {
        var configuration = FileHandler.Configuration()
        configuration.tracer = Tracer(sink: RecordingSink())
        let handler = FileHandler(
            compressor: ScriptedCompressor(), storage: InMemoryStorage(failing: { _, _ in ImagePipeError(.storageRejected, "no") }),
            configuration: configuration)
        let missing = try await handler.run(Job(path: directory.url("src/missing.jpg"), relativePath: "missing.jpg"))
        let read = try #require(missing.trace?.spans.first { $0.name == "read source" }, "the read that failed has its span")
        #expect(
            read.status != .unset && read.attributes.contains(Span.Attribute("error.type", .string(missing.errorCode?.description ?? "?"))), "\(read)"
        )
        #expect(missing.status == .failed && missing.errorCode != nil)
        let rejected = try await handler.run(Job(path: directory.write("src/a.jpg", ScriptedCompressor.image()), relativePath: "a.jpg"))
        #expect(rejected.status == .failed)
        let stores = rejected.trace?.spans.filter { $0.name == "store" } ?? []
        #expect(
            stores.count == 3
                && stores.allSatisfy { $0.status != .unset && $0.attributes.contains(Span.Attribute("error.type", .string("storage_rejected"))) },
            "every failed put's span says so")
    }

    @Test func aBatchNotSampledHasNoneOfItsImagesSampled() async throws {
        let sink = RecordingSink()
        for index in 0..<3 { directory.write("quiet/\(index).jpg", ScriptedCompressor.image("quiet \(index)")) }
        for sampler in [Tracer.Sampler.parentBased(root: .alwaysOn), .ratio(0.5)] {
            var configuration = FileHandler.Configuration()
            configuration.tracer = Tracer(sampler: sampler, sink: sink)
            var runner = BatchRunner(
                scanner: SourceScanner(inputs: [SourceScanner.Input(directory.url("quiet"))]),
                pipeline: JobPipeline(
                    handler: FileHandler(compressor: ScriptedCompressor(), storage: InMemoryStorage(), configuration: configuration)))
            // A caller that did not sample its own span; under the ratio, a trace the ratio leaves out.
            var trace = TraceID.random()
            if case .ratio = sampler {
                while sampler.samples(trace, parent: nil) { trace = TraceID.random() }
            }
            runner.traceParent = TraceParent(traceID: trace, spanID: .random(), sampled: false)
            let summary = try await runner.run { _, _ in }
            #expect(summary.done == 3)
        }
        #expect(sink.recorded.isEmpty, "no image of a run left out is traced on its own: \(sink.recorded.map(\.name))")
    }

    @Test func aBatchIsOneTraceWhoseRunSpanParentsEveryOriginal() async throws {
        let sink = RecordingSink()
        var configuration = FileHandler.Configuration()
        configuration.tracer = Tracer(sink: sink)
        for index in 0..<5 { directory.write("batch/\(index).jpg", ScriptedCompressor.image("batch \(index)")) }
        directory.write("batch/notes.txt", Data("no image".utf8))
        let handler = FileHandler(compressor: ScriptedCompressor(), storage: InMemoryStorage(), configuration: configuration)
        var runner = BatchRunner(
            scanner: SourceScanner(inputs: [SourceScanner.Input(directory.url("batch"))]),
            pipeline: JobPipeline(handler: handler, limits: .init(jobs: 2, uploads: 2)))
        runner.traceParent = producer
        let summary = try await runner.run { _, _ in }
        #expect(summary.done == 5 && summary.skipped == 1)
        let spans = sink.recorded
        let run = try #require(spans.first { $0.name == "batch" })
        #expect(run.traceID == producer.traceID && run.parent == producer.spanID, "the run continues TRACEPARENT")
        let images = spans.filter { $0.name == "image" }
        #expect(images.count == 6 && images.allSatisfy { $0.parent == run.spanID && $0.traceID == run.traceID })
        let ids = Set(spans.map(\.spanID))
        #expect(spans.allSatisfy { $0.traceID == producer.traceID })
        #expect(spans.allSatisfy { $0.parent == producer.spanID || $0.parent.map(ids.contains) == true }, "no span's parent is missing")
        #expect(spans.filter { $0.name == "store" }.count == 15)
    }
}
