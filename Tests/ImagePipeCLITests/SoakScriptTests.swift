// A short run of the soak script (Benchmarks/soak/soak.py) against the built binary, so `make soak` cannot rot.
import Foundation
import ImagePipeTestSupport
import Testing

/// `Benchmarks/soak/soak.py` for a quarter of a minute on a few small fixtures.
@Suite(.offThePool) struct SoakScriptTests {
    let directory = TemporaryDirectory(prefix: "imagepipe-soak")

    @Test func aShortSoakAccountsForEveryDeliveryAndWritesItsTableAndPlot() throws {
        for (index, fixture) in ["formats/small-400x300.jpg", "formats/progressive.jpg", "formats/small-200x150.jpg"].enumerated() {
            CommandRunner.copyFixture("images/" + fixture, to: directory, as: "corpus/\(index)-" + (fixture as NSString).lastPathComponent)
        }
        // Whether memory, descriptors and threads settle is for the real, half-hour run to show, not
        // a quarter of a minute: here their allowances are wide, and every goal must hold (status 0).
        let output = try soak(minutes: 0.25, out: "soak", allowances: ["--rss-allowance", "1.0", "--thread-allowance", "16", "--fd-allowance", "8"])
        #expect(output.status == 0, "\(output.stdout)\n\(output.stderr)")

        let table = try String(contentsOfFile: directory.url("soak/samples.csv"), encoding: .utf8).split(separator: "\n")
        #expect(table.first?.hasPrefix("elapsed_s,rss_mb,hwm_mb,fds,threads,claim_areas") == true)
        let rows = table.dropFirst().map { $0.split(separator: ",", omittingEmptySubsequences: false) }
        #expect(rows.count >= 10, "a sample a second for 15 s")
        #expect(rows.allSatisfy { $0.count == table[0].split(separator: ",").count && Double($0[1])! > 1 && Int($0[3])! > 0 })
        let svg = try String(contentsOfFile: directory.url("soak/soak.svg"), encoding: .utf8)
        #expect(svg.hasPrefix("<svg") && svg.contains("<polyline"))

        let summary = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: directory.url("soak/summary.json")))) as? [String: Any])
        let delivered = try #require(summary["delivered"] as? Int), done = try #require(summary["done"] as? Int)
        let failed = try #require(summary["failed"] as? Int)
        #expect(delivered >= 10 && delivered == done + failed)
        // Every fifth delivery is a bad file, in turn truncated.jpg, empty.jpg, notes.txt and
        // truncated.png: empty.jpg and notes.txt, no images whatever their names, are skipped into
        // done/, the others fail.
        #expect(failed == (0..<(delivered / 5)).count { $0 % 4 == 0 || $0 % 4 == 3 })
        #expect(summary["exit_status"] as? Int == 0, "the worker stops cleanly on SIGTERM")
        // The goals that do not depend on how long the run was hold in a short one too.
        let goals = try #require(summary["goals"] as? [[String: Any]])
        #expect(goals.count == 8)
        for goal in goals { #expect(goal["held"] as? Bool == true, "\(goal)") }
        // The damaged file went to failed/ with its reason, the empty one to done/, skipped.
        let failure = try Data(contentsOf: URL(fileURLWithPath: directory.url("soak/queue/failed/00005-truncated.jpg.error.json")))
        let error = try #require(try JSONSerialization.jsonObject(with: failure) as? [String: Any])
        #expect(error["error_code"] as? String == "corrupt_image")
        let skip = try Data(contentsOf: URL(fileURLWithPath: directory.url("soak/queue/done/00010-empty.jpg.json")))
        let skipped = try #require(try JSONSerialization.jsonObject(with: skip) as? [String: Any])
        #expect(skipped["status"] as? String == "skipped" && skipped["skip_code"] as? String == "not_an_image", "\(skipped)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url("soak/queue/processing")).isEmpty)
    }

    @Test func aBrokenGoalFailsTheSoak() throws {
        CommandRunner.copyFixture("images/formats/small-200x150.jpg", to: directory, as: "corpus/small.jpg")
        // Memory can never stay below nothing: that goal breaks, and the run says so with status 1.
        let output = try soak(minutes: 0.2, out: "broken", allowances: ["--rss-allowance", "-1.0"])
        #expect(output.status == 1, "\(output.stdout)\n\(output.stderr)")
        let summary = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: directory.url("broken/summary.json")))) as? [String: Any])
        let broken = (summary["goals"] as? [[String: Any]] ?? []).filter { $0["held"] as? Bool == false }.compactMap { $0["goal"] as? String }
        #expect(broken.contains { $0.hasPrefix("resident memory at rest") }, "\(broken)")
    }

    /// Runs the soak script on `corpus/` for `minutes`, sampling every second, into `out`.
    func soak(minutes: Double, out: String, allowances: [String]) throws -> CommandRunner.Output {
        let script = (Fixtures.root as NSString).deletingLastPathComponent + "/Benchmarks/soak/soak.py"
        return try CommandRunner.run(
            executable: "/usr/bin/env",
            [
                "python3", script, "--binary", CommandRunner.binary, "--minutes", "\(minutes)", "--every", "1", "--interval", "1",
                "--warmup", "0.5", "--corpus", directory.url("corpus"), "--out", directory.url(out),
            ] + allowances)
    }
}
