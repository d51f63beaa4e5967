import Foundation
import ImagePipe
import ImagePipeMonitoring
import ImagePipeTestSupport
import Prometheus
import Synchronization
import Testing

/// What /healthz and /readyz answer as checks pass and fail and a stop is asked for.
@Suite struct HealthTests {
    let registry = PrometheusCollectorRegistry()

    @Test func readyOnlyOnceEveryCheckPassedAndNeverAfterAStopRequest() {
        let stopping = Mutex(false)
        let health = Health(
            checks: ["queue", "storage"], stopRequested: { stopping.withLock { $0 } },
            factory: CataloguedMetricsFactory(registry: registry))
        let endpoints = MonitoringEndpoints(registry: registry, health: health)
        func ready() -> (status: Int, body: String) {
            let answer = endpoints.respond(to: "/readyz")
            return (answer.status, String(decoding: answer.body, as: UTF8.self))
        }
        #expect(ready().status == 503 && ready().body == "queue: not checked yet\nstorage: not checked yet\n")
        health.record("queue", failure: nil)
        #expect(ready().body == "storage: not checked yet\n")
        health.record("storage", failure: "destination /srv/out is not writable: Read-only file system")
        #expect(ready() == (503, "storage: destination /srv/out is not writable: Read-only file system\n"))
        #expect(health.failing("storage") && !health.failing("queue"))
        #expect(PrometheusText(registry.emitToString()).value("imagepipe_ready") == 0)
        health.record("storage", failure: nil)
        #expect(ready() == (200, "ready\n"))
        #expect(PrometheusText(registry.emitToString()).value("imagepipe_ready") == 1)
        stopping.withLock { $0 = true }
        #expect(ready() == (503, "stopping: a stop was asked for\n"))
        #expect(PrometheusText(registry.emitToString()).value("imagepipe_ready") == 0)
    }

    @Test func healthzFollowsLivenessAndOtherPathsAreNotFound() {
        let alive = Mutex(true)
        let health = Health(checks: [], liveness: { alive.withLock { $0 } }, factory: CataloguedMetricsFactory(registry: registry))
        let scraped = Mutex(0)
        let endpoints = MonitoringEndpoints(registry: registry, health: health, beforeScrape: [{ scraped.withLock { $0 += 1 } }])
        #expect(endpoints.respond(to: "/healthz").status == 200)
        alive.withLock { $0 = false }
        #expect(endpoints.respond(to: "/healthz").status == 503)
        #expect(endpoints.respond(to: "/").status == 404 && endpoints.respond(to: "/metrics/x").status == 404)
        #expect(scraped.withLock { $0 } == 0, "gauges are read only for a scrape")
        let metrics = endpoints.respond(to: "/metrics")
        #expect(metrics.status == 200 && metrics.contentType.hasPrefix("text/plain; version=0.0.4"))
        #expect(scraped.withLock { $0 } == 1)
    }

    @Test(arguments: [
        ("127.0.0.1:9464", "127.0.0.1", 9464), (":9464", "0.0.0.0", 9464), ("[::1]:0", "::1", 0), ("localhost:80", "localhost", 80),
    ])
    func addressesParse(text: String, host: String, port: Int) throws {
        let address = try MonitoringAddress(parsing: text)
        #expect(address.host == host && address.port == port)
        #expect(try MonitoringAddress(parsing: address.description) == address)
    }

    @Test(arguments: ["9464", "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "::1:9464", "[::1:9464", "host:port"])
    func malformedAddressesAreConfigurationErrors(text: String) {
        #expect(throws: ImagePipeError.self) { try MonitoringAddress(parsing: text) }
    }

    /// The descriptor count follows what the process opens. Other suites open and close descriptors
    /// in this process meanwhile (the count once differed from a listing made just after it by 4), so
    /// the test holds 256 of its own and looks for them in the difference, with room for that churn.
    @Test func processFiguresMatchProcSelf() throws {
        let before = try #require(ProcessMetrics.read())
        let held = (0..<256).map { _ in open("/dev/null", O_RDONLY) }
        defer { for descriptor in held { close(descriptor) } }
        #expect(held.allSatisfy { $0 >= 0 })
        let during = try #require(ProcessMetrics.read())
        let added = during.openDescriptors - before.openDescriptors
        #expect(abs(added - 256) <= 32, "\(before.openDescriptors) then \(during.openDescriptors) with 256 more open")
        #expect(during.threads >= 1 && during.residentBytes > 1 << 20)
    }
}
