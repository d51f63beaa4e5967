import Foundation
@testable import ImagePipeBench
import Testing

@Suite struct BenchReportTests {
    @Test func quantilesByNearestRank() {
        let values: [Double] = [5, 1, 4, 2, 3]
        #expect(values.quantile(0.5) == 3)
        #expect(values.quantile(0.95) == 5)
        #expect(values.quantile(0) == 1)
        #expect([Double]().quantile(0.5) == nil)
    }

    @Test func theTableGivesRatiosToImagepipe() {
        let fast = RunMeasurement(seconds: 2, peakResidentBytes: 200_000_000, succeeded: true)
        let slow = RunMeasurement(seconds: 5, peakResidentBytes: 100_000_000, succeeded: true)
        let report = BenchReport(
            images: 10, corpusBytes: 20_000_000, job: ["photo=1600x1600,jpeg,q80"], workers: 2, runsPerTool: 1,
            tools: [
                .init(name: "imagepipe", skipped: nil, runs: [fast], medianSeconds: 2, ratio: 1, peakResidentBytes: 200_000_000),
                .init(name: "vipsthumbnail", skipped: nil, runs: [slow], medianSeconds: 5, ratio: 2.5, peakResidentBytes: 100_000_000),
                .init(name: "pillow", skipped: "python3 module PIL not installed", runs: [], medianSeconds: nil, ratio: nil, peakResidentBytes: nil),
            ],
            stages: ["decode": .init(p50: 10, p95: 20)])
        let lines = report.table.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.hasPrefix("imagepipe") && $0.contains("2.00 s") && $0.contains("1.00x") && $0.contains("5.00") })
        #expect(lines.contains { $0.hasPrefix("vipsthumbnail") && $0.contains("2.50x") && $0.contains("100.0 MB") })
        #expect(lines.contains { $0.hasPrefix("pillow") && $0.contains("skipped: python3 module PIL not installed") })
        let decoded = try? JSONSerialization.jsonObject(with: Data(report.json.utf8)) as? [String: Any]
        #expect((decoded?["tools"] as? [Any])?.count == 3)
        #expect(!report.table.contains("some runs failed"), "every run succeeded")
    }

    @Test func aRowWithFailedRunsSaysWhereTheirOutputIs() {
        var report = BenchReport(
            images: 10, corpusBytes: 20_000_000, job: ["photo=1600x1600,jpeg,q80"], workers: 2, runsPerTool: 2,
            tools: [
                .init(
                    name: "pillow", skipped: nil,
                    runs: [.init(seconds: 2, peakResidentBytes: 1, succeeded: false), .init(seconds: 2, peakResidentBytes: 1, succeeded: true)],
                    medianSeconds: 2, ratio: 1, peakResidentBytes: 1)
            ],
            stages: [:])
        report.commandsLog = ".bench/work/commands.log"
        let lines = report.table.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.hasPrefix("pillow") && $0.hasSuffix("(some runs failed)") })
        #expect(lines.contains("some runs failed: what each tool printed, its errors among it, is in .bench/work/commands.log"), "\(lines)")
    }

    @Test func theTableAndJSONGiveCPUPerImage() throws {
        let run = RunMeasurement(seconds: 2, peakResidentBytes: 100_000_000, succeeded: true, cpuSeconds: 3.5)
        let report = BenchReport(
            images: 1000, corpusBytes: 20_000_000, job: ["photo=1600x1600,jpeg,q80"], workers: 2, runsPerTool: 1,
            tools: [
                .init(
                    name: "imagepipe", skipped: nil, runs: [run], medianSeconds: 2, ratio: 1, peakResidentBytes: 100_000_000,
                    medianCPUSeconds: 3.5, cpuMillisecondsPerImage: 3.5),
                // A row without the per-image figure still gets it from its runs.
                .init(name: "pillow", skipped: nil, runs: [run], medianSeconds: 2, ratio: 1, peakResidentBytes: 100_000_000),
            ],
            stages: [:])
        let lines = report.table.split(separator: "\n").map(String.init)
        let header = try #require(lines.first { $0.hasPrefix("tool") })
        #expect(header.contains("CPU/image"))
        // The column sits beside the wall time, before the ratio.
        let cpuColumn = try #require(header.range(of: "CPU/image")), ratioColumn = try #require(header.range(of: "ratio"))
        #expect(cpuColumn.lowerBound < ratioColumn.lowerBound)
        #expect(lines.contains { $0.hasPrefix("imagepipe") && $0.contains("2.00 s") && $0.contains("3.50 ms") })
        #expect(lines.contains { $0.hasPrefix("pillow") && $0.contains("3.50 ms") })
        let decoded = try #require(JSONSerialization.jsonObject(with: Data(report.json.utf8)) as? [String: Any])
        let tool = try #require((decoded["tools"] as? [[String: Any]])?.first)
        #expect(tool["median_cpu_seconds"] as? Double == 3.5)
        #expect(tool["cpu_ms_per_image"] as? Double == 3.5)
        #expect(((tool["runs"] as? [[String: Any]])?.first?["cpu_seconds"] as? Double) == 3.5)
    }
}
