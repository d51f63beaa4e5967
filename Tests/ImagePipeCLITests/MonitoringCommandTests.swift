import Foundation
#if canImport(Glibc)
import Glibc
#endif
import ImagePipe
import ImagePipeTestSupport
import Testing

/// `--metrics-address` on the real binary: the endpoint checked by promtool and scraped by a real
/// Prometheus, its figures against the queue's own records, /healthz and /readyz through an outage
/// and a shutdown.
@Suite(.offThePool, .serialized, .requires(.prometheus, .promtool))
struct MonitoringCommandTests {
    let directory = TemporaryDirectory(prefix: "imagepipe-monitoring")
    var queue: String { directory.url("queue") }

    func deliver(_ fixture: String, as name: String) {
        InboxDelivery.deliver(Fixtures.data(fixture), to: queue + "/inbox", as: name)
    }

    func files(_ sub: String) -> [String] { directory.files(under: "queue/" + sub).filter { !$0.hasSuffix(".lock") } }

    @Test func aWorkersMetricsPassPromtoolAndMatchWhatItDid() throws {
        try FileManager.default.createDirectory(atPath: queue + "/inbox", withIntermediateDirectories: true)
        let worker = try WorkerProcess(
            [
                "watch", queue, "--dest", directory.url("out"), "--jobs", "1", "--status-interval", "0",
                "--metrics-address", "127.0.0.1:0", "--check-interval", "0.2",
            ],
            log: directory.url("worker.log"))
        let address = try #require(worker.monitoringAddress(), "\(worker.log)")
        #expect(eventually { LoopbackHTTP.get("http://\(address)/readyz").status == 200 }, "\(worker.log)")
        #expect(LoopbackHTTP.get("http://\(address)/healthz").status == 200)

        let good = ["images/formats/landscape.jpg", "images/formats/alpha.png", "images/formats/tiny.png"]
        for (index, fixture) in good.enumerated() { deliver(fixture, as: "good-\(index).\((fixture as NSString).pathExtension)") }
        deliver("hostile/truncated.jpg", as: "broken.jpg")
        #expect(eventually { files("done").count == 6 && files("failed").count == 2 }, "\(worker.log)")

        // A job's figures are counted as it is settled, just after its record is in place.
        var scrape = PrometheusText("")
        #expect(
            eventually {
                scrape = PrometheusText(LoopbackHTTP.get("http://\(address)/metrics").body)
                return scrape.value("imagepipe_jobs_in_flight") == 0 && scrape.sum("imagepipe_jobs_total") == 4
            }, "\(worker.log)")
        let lint = try scrape.promtool()
        #expect(lint.status == 0, "promtool: \(lint.output)")
        #expect(scrape.value("imagepipe_jobs_total", ["outcome": "done"]) == 3, "\(scrape.text)")
        #expect(scrape.value("imagepipe_jobs_total", ["outcome": "failed", "error_code": "corrupt_image"]) == 1)
        #expect(scrape.value("imagepipe_stage_duration_seconds_count", ["stage": "total"]) == 3)
        #expect(scrape.value("imagepipe_stage_duration_seconds_bucket", ["stage": "total", "le": "+Inf"]) == 3)
        #expect(scrape.value("imagepipe_jobs_in_flight") == 0 && scrape.value("imagepipe_jobs_retrying") == 0)
        // The bytes against the queue's own records of each job.
        let records = try good.indices.map { index in
            try JSONDecoder().decode(
                JobResult.self,
                from: Data(
                    contentsOf: URL(
                        fileURLWithPath: queue + "/done/"
                            + files("done")
                            .filter { $0.hasPrefix("good-\(index).") && $0.hasSuffix(".json") }[0])))
        }
        #expect(scrape.value("imagepipe_input_bytes_total") == Double(records.reduce(0) { $0 + ($1.bytes ?? 0) }))
        #expect(scrape.sum("imagepipe_output_bytes_total") == Double(records.reduce(0) { $0 + $1.outputBytes }))
        let totalSeconds = records.reduce(0) { $0 + $1.timings.totalMs } / 1000
        #expect(abs((scrape.value("imagepipe_stage_duration_seconds_sum", ["stage": "total"]) ?? 0) - totalSeconds) < 0.01)
        // The process figures against what /proc says of the worker.
        let pid = worker.process.processIdentifier
        let fds = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count
        let exposedFds = try #require(scrape.value("imagepipe_process_open_fds"))
        #expect(abs(exposedFds - Double(fds)) <= 8, "exposed \(exposedFds), /proc lists \(fds)")
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let rssKiB = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }?.split(separator: " ").dropFirst().first)
        let rss = Double(rssKiB)! * 1024
        let exposedRSS = try #require(scrape.value("imagepipe_process_resident_memory_bytes"))
        #expect(exposedRSS > rss / 2 && exposedRSS < rss * 2, "exposed \(exposedRSS), /proc says \(rss)")

        // A real Prometheus scrapes the worker and answers queries with the same figures.
        let prometheus = try PrometheusServer(scraping: [address])
        #expect(eventually { prometheus.targetHealth()["http://\(address)/metrics"] == "up" }, "\(prometheus.targetHealth())")
        #expect(
            eventually {
                let series = prometheus.query("imagepipe_jobs_total")
                return series.first { $0.labels["outcome"] == "done" }?.value == 3
                    && series.first { $0.labels["outcome"] == "failed" && $0.labels["error_code"] == "corrupt_image" }?.value == 1
            }, "\(prometheus.query("imagepipe_jobs_total"))")
        #expect(eventually { prometheus.query("imagepipe_ready").first?.value == 1 })
        let quantile = prometheus.query("histogram_quantile(0.5, sum by (le) (imagepipe_stage_duration_seconds_bucket{stage=\"total\"}))")
        #expect(quantile.count == 1 && (quantile.first?.value ?? 0) > 0, "\(quantile)")
        prometheus.stop()

        // The destination goes away: not ready until it is back; alive all along.
        let out = directory.url("out")
        try FileManager.default.moveItem(atPath: out, toPath: out + ".away")
        try Data("not a directory".utf8).write(to: URL(fileURLWithPath: out))
        #expect(
            eventually {
                let answer = LoopbackHTTP.get("http://\(address)/readyz")
                return answer.status == 503 && answer.body.contains("storage: ")
            }, "\(LoopbackHTTP.get("http://\(address)/readyz"))")
        #expect(PrometheusText(LoopbackHTTP.get("http://\(address)/metrics").body).value("imagepipe_ready") == 0)
        #expect(LoopbackHTTP.get("http://\(address)/healthz").status == 200)
        try FileManager.default.removeItem(atPath: out)
        // rename(2), not moveItem: the worker's readiness check may make the destination again
        // in between, as an empty folder, which rename replaces.
        #expect(rename(out + ".away", out) == 0, "\(String(cString: strerror(errno)))")
        #expect(eventually { LoopbackHTTP.get("http://\(address)/readyz").status == 200 }, "\(worker.log)")
        #expect(worker.log.contains("readiness check failed") && worker.log.contains("readiness check passes again"))

        worker.send(SIGTERM)
        #expect(worker.waitForExit(seconds: 30) == 0, "\(worker.log)")
        #expect(LoopbackHTTP.get("http://\(address)/healthz").status == 0, "the port closes with the worker")
    }

    @Test func readyzTurns503AsSoonAsAWorkerStartsDraining() throws {
        try FileManager.default.createDirectory(atPath: queue + "/inbox", withIntermediateDirectories: true)
        let blackhole = try Blackhole()
        let worker = try WorkerProcess(
            [
                "watch", queue, "--dest", "s3://bucket/media", "--endpoint", "http://127.0.0.1:\(blackhole.port)",
                "--region", "us-east-1", "--jobs", "1", "--status-interval", "0", "--shutdown-timeout", "120",
                "--metrics-address", "127.0.0.1:0", "--check-interval", "0.2",
            ],
            log: directory.url("stuck.log"),
            environment: ["AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "HOME": directory.path])
        let address = try #require(worker.monitoringAddress(), "\(worker.log)")
        #expect(worker.waitForLog("watching"))
        deliver("images/formats/tiny.png", as: "stuck.png")
        #expect(eventually { blackhole.connections > 0 }, "\(worker.log)")
        // Storage no longer answers (the blackhole holds every request after the first): not ready, but not stopping.
        #expect(eventually { LoopbackHTTP.get("http://\(address)/readyz").body.contains("storage: ") })
        #expect(!LoopbackHTTP.get("http://\(address)/readyz").body.contains("stopping"))

        worker.send(SIGTERM)
        #expect(worker.waitForLog("shutting down"))
        // Draining (the stuck job has 120 s): the port still answers, not ready, still alive.
        let draining = LoopbackHTTP.get("http://\(address)/readyz")
        #expect(draining.status == 503 && draining.body.contains("stopping: a stop was asked for"), "\(draining)")
        #expect(LoopbackHTTP.get("http://\(address)/healthz").status == 200)
        #expect(PrometheusText(LoopbackHTTP.get("http://\(address)/metrics").body).value("imagepipe_jobs_in_flight") == 1)

        worker.send(SIGINT)
        #expect(worker.waitForExit(seconds: 30) == 0, "\(worker.log)")
        #expect(LoopbackHTTP.get("http://\(address)/readyz").status == 0)
    }

    @Test func aBatchServesItsEndpointsForItsWholeRun() throws {
        CommandRunner.copyFixture("images/formats/tiny.png", to: directory, as: "src/tiny.png")
        // The list comes on standard input: the batch waits for it with its endpoints up.
        let batch = try WorkerProcess(
            [
                "batch", "--from", "-", "--dest", directory.url("out"), "--metrics-address", "127.0.0.1:0",
                "--check-interval", "0.2",
            ], log: directory.url("batch.log"), writableInput: true)
        let address = try #require(batch.monitoringAddress(), "\(batch.log)")
        #expect(LoopbackHTTP.get("http://\(address)/healthz").status == 200)
        let waiting = LoopbackHTTP.get("http://\(address)/readyz")
        #expect(waiting.status == 503 && waiting.body.contains("storage: the destination is not set up yet"), "\(waiting)")
        let scrape = PrometheusText(LoopbackHTTP.get("http://\(address)/metrics").body)
        #expect(try scrape.promtool().status == 0)
        #expect(scrape.value("imagepipe_process_threads").map { $0 >= 2 } == true, "\(scrape.text)")

        let writer = try #require(batch.input)
        writer.write(Data((directory.url("src/tiny.png") + "\n").utf8))
        try writer.close()
        #expect(batch.waitForExit(seconds: 60) == 0, "\(batch.log)")
        #expect(FileManager.default.fileExists(atPath: directory.url("out/tiny-large.jpg")))
        #expect(LoopbackHTTP.get("http://\(address)/healthz").status == 0, "the port closes when the batch ends")
    }

    /// A batch has a worker's lifecycle: a stop signal drains it (its endpoints still answer, /readyz
    /// says it is stopping, the image in flight is not abandoned), a second SIGHUP (the same terminal
    /// closing) changes nothing, and a second SIGINT stops it at once, the image unrecorded.
    @Test func aStoppedBatchDrainsWithItsEndpointsUpUntilASecondSignalStopsItAtOnce() throws {
        CommandRunner.copyFixture("images/formats/tiny.png", to: directory, as: "src/stuck.png")
        let blackhole = try Blackhole()
        let batch = try WorkerProcess(
            [
                "batch", directory.url("src"), "--dest", "s3://bucket/media", "--endpoint", "http://127.0.0.1:\(blackhole.port)",
                "--region", "us-east-1", "--manifest", directory.url("stuck.jsonl"), "--metrics-address", "127.0.0.1:0",
                // The readiness check probes no storage in the test's time: the blackhole's one
                // answer is the batch's own start-up check, and the next connection is the upload.
                "--check-interval", "3600", "--log-level", "debug",
            ],
            log: directory.url("stuck-batch.log"),
            environment: ["AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "HOME": directory.path])
        let address = try #require(batch.monitoringAddress(), "\(batch.log)")
        // The sources are found once the start-up probe was answered; the next connection is the
        // image's upload, which waits, never answered.
        #expect(batch.waitForLog("found the sources"), "\(batch.log)")
        #expect(eventually { blackhole.connections > 0 }, "\(batch.log)")

        batch.send(SIGHUP)
        #expect(batch.waitForLog("SIGHUP received: finishing the images in flight, starting no more"), "\(batch.log)")
        batch.send(SIGHUP)
        #expect(batch.waitForLog("SIGHUP received again: the graceful stop goes on"), "\(batch.log)")
        let draining = LoopbackHTTP.get("http://\(address)/readyz")
        #expect(draining.status == 503 && draining.body.contains("stopping: a stop was asked for"), "\(draining)")
        #expect(LoopbackHTTP.get("http://\(address)/healthz").status == 200, "still draining after the second SIGHUP")

        batch.send(SIGINT)
        #expect(batch.waitForExit(seconds: 30) == 130, "\(batch.log)")
        #expect(batch.log.contains("SIGINT received again: stopping at once"))
        #expect(batch.log.contains("stopped at once: images in flight were not finished"))
        let manifest = (try? String(contentsOfFile: directory.url("stuck.jsonl"), encoding: .utf8)) ?? ""
        #expect(!manifest.contains("stuck.png"), "an image stopped at once is not recorded: the next run does it")
        #expect(LoopbackHTTP.get("http://\(address)/healthz").status == 0)
    }

    @Test func aTakenPortOrAMalformedAddressStopsTheCommandAtOnce() throws {
        let blackhole = try Blackhole()
        let taken = try CommandRunner.run([
            "batch", directory.path, "--dest", directory.url("out"),
            "--metrics-address", "127.0.0.1:\(blackhole.port)",
        ])
        #expect(taken.status == 2 && taken.stderr.contains("cannot listen on 127.0.0.1:\(blackhole.port)"), "\(taken)")
        // The message says what is wrong and which setting chose the address, not the socket call's errno.
        #expect(taken.stderr.contains("--metrics-address") && taken.stderr.contains("IMAGEPIPE_METRICS_ADDRESS"), "\(taken)")
        #expect(taken.stderr.contains("the address is already in use"), "\(taken)")
        #expect(!taken.stderr.contains("errno") && !taken.stderr.contains("bind("), "\(taken)")
        let malformed = try CommandRunner.run(["batch", directory.path, "--dest", directory.url("out"), "--metrics-address", "9464"])
        #expect(malformed.status == 2 && malformed.stderr.contains("is not HOST:PORT"), "\(malformed)")
    }
}
