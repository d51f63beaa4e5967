import Foundation
import ImagePipe
import ImagePipeTestSupport
import Testing
import ImagePipeRemoteStorage

/// A worker storing into S3 through a proxy that fails twice: every metric family shows up in its
/// scrape, with the figures of what happened, and the Grafana dashboard names only those families.
@Suite(.offThePool, .requires(.promtool))
struct MonitoringIntoS3Tests {
    let directory = TemporaryDirectory(prefix: "imagepipe-monitoring-s3")

    /// The repository's deploy/grafana-dashboard.json.
    static var dashboardPath: String { (Fixtures.root as NSString).deletingLastPathComponent + "/deploy/grafana-dashboard.json" }

    @Test func everyFamilyIsExposedAndTheDashboardNamesOnlyThose() throws {
        let moto = try MotoServer.signed()
        let bucket = try moto.makeBucket()
        // The start-up probe and the first readiness check (HEAD bucket), then the job's three lookups
        // pass; its first put meets two 503s (a storage retry, then the attempt fails and the job is retried).
        let proxy = try FaultProxy(upstream: moto, plan: ["pass", "pass", "pass", "pass", "pass", "503", "503"])
        let queue = directory.url("queue")
        try FileManager.default.createDirectory(atPath: queue + "/inbox", withIntermediateDirectories: true)
        // Notifications go to a receiver whose first answer is a 500: one retry, then each is delivered.
        let receiver = try NotifyReceiver(secret: "whsec-monitoring", fail: 1)
        let worker = try WorkerProcess(
            [
                "watch", queue, "--dest", "s3://\(bucket)/media", "--endpoint", proxy.endpoint, "--region", "us-east-1",
                "--jobs", "1", "--uploads", "1", "--retry-delay", "0.05", "--max-attempts", "4", "--status-interval", "0",
                "--metrics-address", "127.0.0.1:0", "--check-interval", "3600", "--notify-url", receiver.url,
            ],
            log: directory.url("worker.log"),
            environment: [
                "AWS_ACCESS_KEY_ID": moto.credentials.accessKeyID, "AWS_SECRET_ACCESS_KEY": moto.credentials.secretAccessKey,
                "AWS_MAX_ATTEMPTS": "2", "HOME": directory.path, "IMAGEPIPE_NOTIFY_SECRET": "whsec-monitoring",
            ])
        let address = try #require(worker.monitoringAddress(), "\(worker.log)")
        #expect(eventually { LoopbackHTTP.get("http://\(address)/readyz").status == 200 }, "\(worker.log)")

        func deliver(_ fixture: String, as name: String) throws {
            InboxDelivery.deliver(Fixtures.data(fixture), to: queue + "/inbox", as: name)
        }
        try deliver("images/formats/tiny.png", as: "photo.png")
        #expect(eventually { FileManager.default.fileExists(atPath: queue + "/done/photo.png.json") }, "\(worker.log)")
        try deliver("hostile/truncated.jpg", as: "broken.jpg")
        #expect(eventually { FileManager.default.fileExists(atPath: queue + "/failed/broken.jpg.error.json") }, "\(worker.log)")

        // Counted once the receiver's answer is in: wait for the count rather than the receiver.
        #expect(
            eventually {
                PrometheusText(LoopbackHTTP.get("http://\(address)/metrics").body).value("imagepipe_notifications_total", ["outcome": "delivered"])
                    == 2
            }, "\(worker.log)")
        #expect(try receiver.received().map(\.answer) == ["500", "200", "200"])

        let scrape = PrometheusText(LoopbackHTTP.get("http://\(address)/metrics").body)
        let lint = try scrape.promtool()
        #expect(lint.status == 0, "promtool: \(lint.output)")
        #expect(scrape.value("imagepipe_jobs_total", ["outcome": "done"]) == 1, "\(scrape.text)")
        #expect(scrape.value("imagepipe_jobs_total", ["outcome": "failed", "error_code": "corrupt_image"]) == 1)
        #expect(scrape.value("imagepipe_job_retries_total", ["error_code": "storage_unavailable"]) == 1)
        #expect(scrape.value("imagepipe_storage_retries_total", ["service": "s3"]) == 1)
        #expect(scrape.value("imagepipe_notifications_total", ["outcome": "delivered"]) == 2, "\(scrape.text)")
        #expect(scrape.value("imagepipe_notification_retries_total") == 1)
        let answered503 = proxy.entries().filter { $0.fault == "503" }.count
        #expect(scrape.value("imagepipe_storage_requests_total", ["service": "s3", "method": "PUT", "status": "503"]) == Double(answered503))
        #expect(
            scrape.sum("imagepipe_storage_requests_total") == Double(proxy.entries().count),
            "every request through the proxy is counted once")

        // Every family the catalogue knows is exposed; the dashboard names exactly these.
        let exposed = Set(scrape.types.keys.filter { $0.hasPrefix("imagepipe_") })
        let dashboard = try String(contentsOfFile: Self.dashboardPath, encoding: .utf8)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(dashboard.utf8)) as? [String: Any])
        let panels = try #require(object["panels"] as? [[String: Any]])
        let expressions = panels.flatMap { ($0["targets"] as? [[String: Any]] ?? []).compactMap { $0["expr"] as? String } }
        #expect(expressions.count >= panels.count, "every panel queries something")
        var named = Set<String>()
        for expression in expressions {
            for match in expression.matches(of: #/imagepipe_[a-z_]+/#) {
                var name = String(match.output)
                for suffix in ["_bucket", "_sum", "_count"] where name.hasSuffix(suffix) {
                    let family = String(name.dropLast(suffix.count))
                    if scrape.types[family] == "histogram" { name = family }
                }
                named.insert(name)
            }
        }
        #expect(named.subtracting(exposed).isEmpty, "the dashboard names metrics the worker does not expose: \(named.subtracting(exposed))")
        #expect(exposed.subtracting(named).isEmpty, "exposed but on no panel: \(exposed.subtracting(named))")

        worker.send(SIGTERM)
        #expect(worker.waitForExit(seconds: 30) == 0, "\(worker.log)")
    }
}
