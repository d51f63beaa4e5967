// Traces: the tracer the OTEL_* variables (or --otlp-endpoint) ask for, and the service that sends what is left at a stop.
import ArgumentParser
import Foundation
import ImagePipe
import ImagePipeRemoteStorage
import Logging
import ServiceLifecycle

extension CompositionRoot {
    /// The tracer when an OTLP endpoint is configured, else nil: then no job is traced and nothing
    /// is spent on it.
    ///
    /// - Throws: `configuration` for a variable that cannot be used (a gRPC protocol, a sampler
    ///   imagepipe lacks, a URL that is none): the command stops before its first job.
    static func tracer(
        _ service: ServiceOptions, environment: [String: String] = ProcessInfo.processInfo.environment, logger: Logger
    ) throws(ImagePipeError) -> Tracer? {
        guard
            let configuration = try TracingConfiguration.from(
                environment: environment, endpoint: service.otlpEndpoint, serviceVersion: ImagePipeCommand.configuration.version)
        else { return nil }
        logger.info(
            "exporting traces",
            metadata: ["url": "\(configuration.url)", "sampler": "\(environment["OTEL_TRACES_SAMPLER"] ?? "parentbased_always_on")"])
        return Tracer(sampler: configuration.sampler, sink: OTLPExporter(configuration: configuration, logger: logger))
    }

    /// The W3C context a batch's span continues: `TRACEPARENT` in the environment, as a CI job or
    /// a calling program passes it; nil when absent or not a valid one (warned).
    static func environmentTraceParent(
        _ environment: [String: String] = ProcessInfo.processInfo.environment, logger: Logger
    ) -> TraceParent? {
        guard let text = environment["TRACEPARENT"], !text.isEmpty else { return nil }
        guard let parent = TraceParent(text) else {
            logger.warning("TRACEPARENT is not a W3C traceparent: starting a new trace", metadata: ["traceparent": "\(text)"])
            return nil
        }
        return parent
    }

    /// Sends the spans still waiting, for at most `limit` (blocking I/O, off the cooperative pool).
    static func flushTraces(_ tracer: Tracer?, within limit: Duration = .seconds(5)) async {
        guard let exporter = tracer?.sink as? OTLPExporter else { return }
        await BlockingIO.run { exporter.shutdown(within: limit) }
    }
}

/// Keeps the trace exporter for as long as the worker runs and sends what is left once it has
/// stopped: first in the group, so it stops last, after the worker's last settlement and notice.
struct TraceExportService: Service {
    let tracer: Tracer

    func run() async throws {
        try? await gracefulShutdown()
        await CompositionRoot.flushTraces(tracer)
    }
}
