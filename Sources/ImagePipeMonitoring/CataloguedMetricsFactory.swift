// The swift-metrics backend: the Prometheus registry, with the catalogue's help text and buckets for imagepipe's metrics.
public import CoreMetrics
public import Prometheus

/// Hands swift-metrics' API calls to a ``PrometheusCollectorRegistry``.
///
/// swift-prometheus' own factory registers every metric without help text, which
/// `promtool check metrics` reports as a problem; this one registers the metrics of the
/// ``MetricCatalogue`` with theirs (and durations with the catalogue's buckets). A metric not in the
/// catalogue (a library's) is still exported, with a generic help text.
public struct CataloguedMetricsFactory: MetricsFactory {
    /// Where the metrics are kept and rendered from.
    public let registry: PrometheusCollectorRegistry
    private let fallback: PrometheusMetricsFactory

    /// Creates a factory over `registry`.
    public init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
        var fallback = PrometheusMetricsFactory(registry: registry)
        fallback.defaultDurationHistogramBuckets = MetricCatalogue.durationBuckets
        self.fallback = fallback
    }

    private func descriptor(_ label: String) -> MetricNameDescriptor {
        MetricCatalogue.named(label)?.descriptor
            ?? MetricNameDescriptor(metricName: label, unitName: "", helpText: "Recorded through swift-metrics by a library.")
    }

    public func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        registry.makeCounter(descriptor: descriptor(label), labels: dimensions)
    }

    public func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        registry.makeCounter(descriptor: descriptor(label), labels: dimensions)
    }

    public func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        guard aggregate else { return registry.makeGauge(descriptor: descriptor(label), labels: dimensions) }
        return registry.makeValueHistogram(
            descriptor: descriptor(label), labels: dimensions,
            buckets: fallback.defaultValueHistogramBuckets)
    }

    public func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        registry.makeGauge(descriptor: descriptor(label), labels: dimensions)
    }

    public func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        registry.makeDurationHistogram(descriptor: descriptor(label), labels: dimensions, buckets: MetricCatalogue.durationBuckets)
    }

    public func destroyCounter(_ handler: any CounterHandler) { fallback.destroyCounter(handler) }
    public func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) { fallback.destroyFloatingPointCounter(handler) }
    public func destroyRecorder(_ handler: any RecorderHandler) { fallback.destroyRecorder(handler) }
    public func destroyMeter(_ handler: any MeterHandler) { fallback.destroyMeter(handler) }
    public func destroyTimer(_ handler: any TimerHandler) { fallback.destroyTimer(handler) }
}
