import Foundation
import ImagePipe
import ImagePipeMonitoring
import ImagePipeTestSupport
import Prometheus
import Testing
import CoreMetrics

/// Results recorded as metrics, read back from the registry's own exposition text.
@Suite struct JobMetricsTests {
    let registry = PrometheusCollectorRegistry()

    func doneResult() -> JobResult {
        var result = JobResult(
            source: "a.jpg", status: .done, bytes: 1000,
            variants: [
                VariantRecord(
                    name: "large", key: "a-large.jpg", url: "", format: .jpeg, bytes: 300,
                    encoding: VariantEncoding(size: PixelSize(width: 2048, height: 1365))),
                VariantRecord(
                    name: "thumb", key: "a-thumb.webp", url: "", format: .webp, bytes: 200,
                    encoding: VariantEncoding(size: PixelSize(width: 320, height: 213))),
            ])
        result.timings.readMs = 20
        result.timings.decodeMs = 300
        result.timings.encodeMs = 900
        result.timings.storeMs = 100
        result.timings.totalMs = 1500
        return result
    }

    @Test func outcomesStageDurationsAndBytesComeFromTheResults() throws {
        let metrics = JobMetrics(factory: CataloguedMetricsFactory(registry: registry))
        metrics.jobFinished(doneResult())
        metrics.jobFinished(JobResult(source: "b.jpg", status: .failed, error: ImagePipeError(.corruptImage, "corrupt or truncated image data")))
        metrics.jobFinished(.skipped("c.jpg", .upToDate, reason: "every output is in place"))
        metrics.jobRetrying(JobResult(source: "d.jpg", status: .failed, error: ImagePipeError(.storageUnavailable, "503 Slow Down")))
        // Cancelled while it failed to decode: its fate is `cancelled`, not a failure.
        metrics.jobCancelled(JobResult(source: "e.jpg", status: .failed, error: ImagePipeError(.corruptImage, "cut short")))

        let scrape = PrometheusText(registry.emitToString())
        #expect(scrape.value("imagepipe_jobs_total", ["outcome": "done", "error_code": ""]) == 1, "\(scrape.text)")
        #expect(scrape.value("imagepipe_jobs_total", ["outcome": "failed", "error_code": "corrupt_image"]) == 1)
        #expect(scrape.value("imagepipe_jobs_total", ["outcome": "skipped"]) == 1)
        #expect(scrape.value("imagepipe_jobs_total", ["outcome": "cancelled", "error_code": ""]) == 1, "\(scrape.text)")
        #expect(scrape.sum("imagepipe_jobs_total") == 4, "a retry is not a finished job")
        #expect(scrape.value("imagepipe_job_retries_total", ["error_code": "storage_unavailable"]) == 1)
        #expect(scrape.value("imagepipe_input_bytes_total") == 1000)
        #expect(scrape.value("imagepipe_output_bytes_total", ["format": "jpeg"]) == 300)
        #expect(scrape.value("imagepipe_output_bytes_total", ["format": "webp"]) == 200)

        // Only the done job's stages are timed, each in seconds.
        for (stage, seconds) in [("read", 0.02), ("decode", 0.3), ("encode", 0.9), ("store", 0.1), ("total", 1.5)] {
            #expect(scrape.value("imagepipe_stage_duration_seconds_count", ["stage": stage]) == 1, "\(stage)")
            #expect(abs((scrape.value("imagepipe_stage_duration_seconds_sum", ["stage": stage]) ?? 0) - seconds) < 1e-9, "\(stage)")
            let buckets = scrape.samples.filter { $0.name == "imagepipe_stage_duration_seconds_bucket" && $0.labels["stage"] == stage }
            #expect(buckets.count == MetricCatalogue.durationBuckets.count + 1, "every bucket and +Inf")
            for bucket in buckets {
                let bound = bucket.labels["le"] == "+Inf" ? Double.infinity : Double(bucket.labels["le"] ?? "") ?? .nan
                #expect(bucket.value == (seconds <= bound ? 1 : 0), "\(stage) le=\(bucket.labels["le"] ?? "")")
            }
        }
    }

    @Test(.requires(.promtool))
    func everyCatalogueMetricPassesPromtool() throws {
        let factory = CataloguedMetricsFactory(registry: registry)
        let metrics = JobMetrics(factory: factory)
        metrics.jobFinished(doneResult())
        metrics.jobFinished(JobResult(source: "b.jpg", status: .failed, error: ImagePipeError(.corruptImage, "corrupt")))
        metrics.jobRetrying(JobResult(source: "d.jpg", status: .failed, error: ImagePipeError(.storageUnavailable, "503")))
        WorkloadGauges(factory: factory).set(inFlight: 2, retrying: 1)
        ProcessMetrics(factory: factory).update()
        _ = Health(checks: ["storage"], factory: factory)
        // The object stores count requests through swift-metrics' API with these labels.
        factory.makeCounter(label: "imagepipe_storage_requests_total", dimensions: [("service", "s3"), ("method", "PUT"), ("status", "503")])
            .increment(by: 1)
        factory.makeCounter(label: "imagepipe_storage_retries_total", dimensions: [("service", "s3")]).increment(by: 1)
        // So does the notifier, for --notify-url.
        factory.makeCounter(label: "imagepipe_notifications_total", dimensions: [("outcome", "delivered")]).increment(by: 1)
        factory.makeCounter(label: "imagepipe_notification_retries_total", dimensions: []).increment(by: 1)
        // And the image helpers' pool, when it replaces one.
        factory.makeCounter(label: "imagepipe_helper_restarts_total", dimensions: [("reason", "crashed")]).increment(by: 1)

        let scrape = PrometheusText(registry.emitToString())
        #expect(Set(scrape.types.keys) == Set(MetricCatalogue.all.map(\.name)), "every catalogue metric, nothing else")
        for definition in MetricCatalogue.all {
            #expect(scrape.types[definition.name] == definition.kind.rawValue, "\(definition.name)")
            #expect(scrape.text.contains("# HELP \(definition.name) \(definition.help)\n"), "\(definition.name)")
        }
        let lint = try scrape.promtool()
        #expect(lint.status == 0, "\(lint.output)")
    }

    @Test func aLibrarysMetricStillGetsAHelpText() throws {
        let factory = CataloguedMetricsFactory(registry: registry)
        factory.makeCounter(label: "library_events_total", dimensions: []).increment(by: 2)
        let text = registry.emitToString()
        #expect(text.contains("# HELP library_events_total ") && text.contains("library_events_total 2"), "\(text)")
    }
}
