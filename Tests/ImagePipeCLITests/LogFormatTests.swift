import Foundation
import ImagePipeTestSupport
import Testing

/// `--log-format`: JSON lines a collector can parse, the job's values in fields rather than in the
/// message, and no secret in either format.
@Suite(.offThePool) struct LogFormatTests {
    let directory = TemporaryDirectory(prefix: "imagepipe-logs")

    /// Every line of `stderr` as a JSON object; fails the test for a line that is not one.
    func objects(_ stderr: String) -> [[String: Any]] {
        stderr.split(separator: "\n").compactMap { line in
            let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            #expect(object != nil, "not a JSON object: \(line)")
            return object
        }
    }

    @Test func jsonLinesCarryTimeLevelMessageLabelAndEachJobsFields() throws {
        CommandRunner.copyFixture("images/formats/landscape.jpg", to: directory, as: "src/a.jpg")
        CommandRunner.copyFixture("images/formats/tiny.png", to: directory, as: "src/b.png")
        CommandRunner.copyFixture("hostile/truncated.jpg", to: directory, as: "src/broken.jpg")
        let output = try CommandRunner.run([
            "batch", directory.url("src"), "--dest", directory.url("out"), "--log-format", "json",
            "--log-level", "debug",
        ])
        #expect(output.status == 1, "one image failed: \(output.stderr)")
        let lines = objects(output.stderr)
        let time = try Regex(#"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$"#)
        for line in lines {
            #expect((line["time"] as? String).map { $0.wholeMatch(of: time) != nil } == true, "\(line)")
            #expect(["trace", "debug", "info", "notice", "warning", "error", "critical"].contains(line["level"] as? String ?? ""), "\(line)")
            #expect(line["message"] is String && (line["label"] as? String)?.hasPrefix("imagepipe") == true, "\(line)")
        }
        let failed = try #require(lines.first { $0["message"] as? String == "failed" }, "\(output.stderr)")
        #expect(failed["level"] as? String == "error" && failed["source"] as? String == "broken.jpg")
        #expect(failed["error_code"] as? String == "corrupt_image" && (failed["error"] as? String)?.contains("corrupt") == true)
        let done = lines.filter { $0["message"] as? String == "done" }
        #expect(Set(done.compactMap { $0["source"] as? String }) == ["a.jpg", "b.png"], "\(output.stderr)")
        for line in done {
            // Numbers stay numbers.
            for field in ["total_ms", "decode_ms", "encode_ms", "store_ms", "input_bytes", "output_bytes"] {
                #expect(line[field] is NSNumber && !(line[field] is String), "\(field) in \(line)")
            }
        }
        let summary = try #require(lines.first { $0["message"] as? String == "summary" })
        #expect(summary["done"] as? Int == 2 && summary["failed"] as? Int == 1, "\(summary)")

        // The same run as text: the fields follow the message as key=value.
        let text = try CommandRunner.run(["batch", directory.url("src"), "--dest", directory.url("out2")])
        let failedLine = try #require(text.stderr.split(separator: "\n").first { $0.contains(" error failed ") }, "\(text.stderr)")
        #expect(failedLine.contains("error_code=corrupt_image") && failedLine.contains("source=broken.jpg"), "\(failedLine)")
        #expect(text.stderr.contains("imagepipe: 2 done, 1 failed"), "\(text.stderr)")
    }

    @Test(arguments: ["text", "json"])
    func noSecretReachesTheLog(format: String) throws {
        let password = "pw-in-the-url-\(UUID().uuidString.prefix(6))"
        let secrets = [
            "AWS_SECRET_ACCESS_KEY": "aws-secret-\(UUID().uuidString)", "SUPABASE_SERVICE_ROLE_KEY": "supabase-key-\(UUID().uuidString)",
            "SUPABASE_KEY": "supabase-anon-\(UUID().uuidString)", "PGPASSWORD": "pg-password-\(UUID().uuidString)",
        ]
        // A queue URL with a password, at a port where nothing listens: the worker keeps trying and logs why.
        let url = "postgres://imagepipe:\(password)@127.0.0.1:\(LoopbackHTTP.freePort())/jobs?queue=images&sslmode=disable"
        let worker = try WorkerProcess(
            [
                "watch", url, "--dest", directory.url("out-\(format)"), "--log-format", format,
                "--log-level", "trace", "--shutdown-timeout", "0",
            ],
            log: directory.url("\(format).log"),
            environment: secrets.merging(["AWS_ACCESS_KEY_ID": "test", "SUPABASE_URL": "http://127.0.0.1:1"]) { $1 })
        #expect(worker.waitForLog("cannot reach PostgreSQL"), "\(worker.log)")
        worker.send(SIGKILL)
        _ = worker.waitForExit(seconds: 30)
        let log = worker.log
        #expect(log.contains("postgres://imagepipe@127.0.0.1"), "the queue is named, without its password: \(log)")
        #expect(!log.contains(password), "\(log)")
        for (name, secret) in secrets { #expect(!log.contains(secret), "\(name) in \(log)") }
        if format == "json" { _ = objects(log) }
    }

    /// Timings are sums of clock readings: a record that says `"queue_ms":12.000000001` reads as a
    /// bug. Every millisecond figure in the manifest has at most two decimals.
    @Test func timingsAreWrittenToHundredthsOfAMillisecond() throws {
        CommandRunner.copyFixture("images/formats/landscape.jpg", to: directory, as: "src/a.jpg")
        CommandRunner.copyFixture("images/formats/tiny.png", to: directory, as: "src/b.png")
        let output = try CommandRunner.run([
            "batch", directory.url("src"), "--dest", directory.url("out"), "--manifest", directory.url("m.jsonl"),
            "--variant", "t=64x,webp,q70", "--variant", "u=32x,jpeg,q70",
        ])
        #expect(output.status == 0, "\(output.stderr)")
        let manifest = try String(contentsOfFile: directory.url("m.jsonl"), encoding: .utf8)
        let figure = try Regex(#""([a-z]+_ms)":(-?[0-9.eE+-]+)"#)
        var seen = 0
        for match in manifest.matches(of: figure) {
            let text = String(match.output[2].substring ?? "")
            seen += 1
            #expect(text.wholeMatch(of: /[0-9]+(\.[0-9]{1,2})?/) != nil, "\(match.output[1].substring ?? ""): \(text)")
        }
        #expect(seen >= 14, "every stage of both images: \(manifest)")
    }
}
