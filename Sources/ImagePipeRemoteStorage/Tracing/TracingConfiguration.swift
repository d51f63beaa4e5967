// Where traces go and which are kept, read from OpenTelemetry's standard variables (OTEL_*) as every collector's documentation gives them.
import Foundation
public import ImagePipe

/// The trace exporter's settings, from the variables every OpenTelemetry SDK reads:
///
/// - `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as it is), else `OTEL_EXPORTER_OTLP_ENDPOINT`
///   with `/v1/traces` added; neither set (and no `otlp-endpoint` option) exports nothing;
/// - `OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL`: `http/protobuf`, the one imagepipe speaks;
/// - `OTEL_EXPORTER_OTLP_[TRACES_]HEADERS` and `_TIMEOUT` (milliseconds);
/// - `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`;
/// - `OTEL_TRACES_SAMPLER` and `OTEL_TRACES_SAMPLER_ARG`; `OTEL_TRACES_EXPORTER=none` and
///   `OTEL_SDK_DISABLED=true` turn it off;
/// - `OTEL_BSP_SCHEDULE_DELAY`, `OTEL_BSP_MAX_QUEUE_SIZE`, `OTEL_BSP_MAX_EXPORT_BATCH_SIZE`.
public struct TracingConfiguration: Sendable, Equatable {
    /// The URL spans are POSTed to.
    public var url: String
    public var headers: [String: String] = [:]
    public var timeout: Duration = .seconds(10)
    public var sampler: Tracer.Sampler = .parentBased(root: .alwaysOn)
    /// The process's resource attributes, `service.name` among them.
    public var resource: [String: String] = [:]
    /// How often spans waiting are sent.
    public var scheduleDelay: Duration = .seconds(5)
    /// Spans held at most; more are dropped (and counted) rather than wait.
    public var maxQueueSize = 2048
    /// Spans in one request at most.
    public var maxBatchSize = 512

    public init(url: String) { self.url = url }

    /// The configuration the environment (and an `endpoint` given as an option, which wins over the
    /// variables' endpoint) asks for; nil when nothing is to be exported.
    public static func from(
        environment: [String: String], endpoint option: String? = nil, serviceVersion: String
    ) throws(ImagePipeError) -> TracingConfiguration? {
        func value(_ name: String) -> String? {
            guard let text = environment[name]?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
            return text
        }
        func bad(_ name: String, _ why: String) -> ImagePipeError { ImagePipeError(.configuration, "\(name): \(why)") }
        if value("OTEL_SDK_DISABLED")?.lowercased() == "true" { return nil }
        switch value("OTEL_TRACES_EXPORTER")?.lowercased() {
        case nil, "otlp": break
        case "none": return nil
        case let other?: throw bad("OTEL_TRACES_EXPORTER", "'\(other)' is not an exporter imagepipe has: otlp or none")
        }
        let url: String
        if let option {
            url = Self.tracesURL(base: option)
        } else if let traces = value("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            url = traces
        } else if let base = value("OTEL_EXPORTER_OTLP_ENDPOINT") {
            url = Self.tracesURL(base: base)
        } else {
            return nil
        }
        guard let parsed = URL(string: url), ["http", "https"].contains(parsed.scheme?.lowercased() ?? ""), parsed.host != nil else {
            throw bad("the OTLP endpoint", "'\(url)' is not an http:// or https:// URL")
        }
        var configuration = TracingConfiguration(url: url)
        let protocolName = value("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") ?? value("OTEL_EXPORTER_OTLP_PROTOCOL") ?? "http/protobuf"
        guard protocolName == "http/protobuf" else {
            throw bad("OTEL_EXPORTER_OTLP_PROTOCOL", "'\(protocolName)' is not spoken: imagepipe exports http/protobuf (a collector's port 4318)")
        }
        for name in ["OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"] {
            guard let text = value(name) else { continue }
            for (key, header) in try pairs(text, name) { configuration.headers[key] = header }
        }
        if let text = value("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT") ?? value("OTEL_EXPORTER_OTLP_TIMEOUT") {
            guard let ms = Int(text), ms > 0 else { throw bad("OTEL_EXPORTER_OTLP_TIMEOUT", "'\(text)' is not a number of milliseconds above 0") }
            configuration.timeout = .milliseconds(ms)
        }
        configuration.sampler = try sampler(value("OTEL_TRACES_SAMPLER"), argument: value("OTEL_TRACES_SAMPLER_ARG"))
        configuration.resource = ["service.name": "imagepipe", "service.version": serviceVersion]
        if let text = value("OTEL_RESOURCE_ATTRIBUTES") {
            for (key, attribute) in try pairs(text, "OTEL_RESOURCE_ATTRIBUTES") { configuration.resource[key] = attribute }
        }
        if let name = value("OTEL_SERVICE_NAME") { configuration.resource["service.name"] = name }
        for (name, bounds) in [
            ("OTEL_BSP_SCHEDULE_DELAY", 1...3_600_000), ("OTEL_BSP_MAX_QUEUE_SIZE", 1...1_000_000), ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 1...100_000),
        ] {
            guard let text = value(name) else { continue }
            guard let number = Int(text), bounds.contains(number) else {
                throw bad(name, "'\(text)' is not a whole number from \(bounds.lowerBound) to \(bounds.upperBound)")
            }
            switch name {
            case "OTEL_BSP_SCHEDULE_DELAY": configuration.scheduleDelay = .milliseconds(number)
            case "OTEL_BSP_MAX_QUEUE_SIZE": configuration.maxQueueSize = number
            default: configuration.maxBatchSize = number
            }
        }
        configuration.maxBatchSize = min(configuration.maxBatchSize, configuration.maxQueueSize)
        return configuration
    }

    /// The traces path under a base endpoint, as the OTLP exporter specification builds it.
    static func tracesURL(base: String) -> String {
        (base.hasSuffix("/") ? String(base.dropLast()) : base) + "/v1/traces"
    }

    /// `OTEL_TRACES_SAMPLER`'s names (the default is `parentbased_always_on`).
    static func sampler(_ name: String?, argument: String?) throws(ImagePipeError) -> Tracer.Sampler {
        func ratio() throws(ImagePipeError) -> Double {
            guard let argument else { return 1 }
            guard let fraction = Double(argument), fraction >= 0, fraction <= 1 else {
                throw ImagePipeError(.configuration, "OTEL_TRACES_SAMPLER_ARG: '\(argument)' is not a fraction from 0 to 1")
            }
            return fraction
        }
        switch name?.lowercased() ?? "parentbased_always_on" {
        case "always_on": return .alwaysOn
        case "always_off": return .alwaysOff
        case "traceidratio": return .ratio(try ratio())
        case "parentbased_always_on": return .parentBased(root: .alwaysOn)
        case "parentbased_always_off": return .parentBased(root: .alwaysOff)
        case "parentbased_traceidratio": return .parentBased(root: .ratio(try ratio()))
        case let other:
            throw ImagePipeError(
                .configuration,
                "OTEL_TRACES_SAMPLER: '\(other)' is not a sampler imagepipe has: always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or parentbased_traceidratio"
            )
        }
    }

    /// `key=value,key=value` with percent-encoded values, as the W3C Baggage form the variables use.
    static func pairs(_ text: String, _ name: String) throws(ImagePipeError) -> [(String, String)] {
        var pairs: [(String, String)] = []
        for item in text.split(separator: ",") {
            let parts = item.split(separator: "=", maxSplits: 1)
            let key = parts.first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
            guard parts.count == 2, !key.isEmpty else { throw ImagePipeError(.configuration, "\(name): '\(item)' is not key=value") }
            let raw = parts[1].trimmingCharacters(in: .whitespaces)
            pairs.append((key, raw.removingPercentEncoding ?? raw))
        }
        return pairs
    }
}
