// The results of a benchmark: per-tool times and memory, ratios to imagepipe, imagepipe's stage percentiles.
import Foundation
import ImagePipe

/// Everything a benchmark measured, printable as a table or JSON.
public struct BenchReport: Sendable, Codable {
    /// One tool's results.
    public struct Tool: Sendable, Codable {
        /// Its name.
        public var name: String
        /// Why it did not run, when it did not.
        public var skipped: String?
        /// Every run, in order.
        public var runs: [RunMeasurement]
        /// Median wall time in seconds.
        public var medianSeconds: Double?
        /// Median time over imagepipe's median: above 1, imagepipe is faster.
        public var ratio: Double?
        /// Peak resident memory over all runs, in bytes.
        public var peakResidentBytes: Int?
        /// Images per second at the median time.
        public var imagesPerSecond: Double?
        /// Megabytes (10⁶ bytes) of originals per second at the median time.
        public var megabytesPerSecond: Double?

        enum CodingKeys: String, CodingKey {
            case name, skipped, runs, medianSeconds = "median_seconds", ratio, peakResidentBytes = "peak_rss_bytes"
            case imagesPerSecond = "images_per_second", megabytesPerSecond = "mb_per_second"
        }
    }

    /// Percentiles of one stage, in milliseconds per image.
    public struct Percentiles: Sendable, Codable, Equatable {
        /// Median.
        public var p50: Double
        /// 95th percentile.
        public var p95: Double
    }

    /// Images in the corpus.
    public var images: Int
    /// Corpus bytes.
    public var corpusBytes: Int
    /// The variants, in command-line form.
    public var job: [String]
    /// Workers per tool.
    public var workers: Int
    /// Runs per tool.
    public var runsPerTool: Int
    /// Every tool, imagepipe first.
    public var tools: [Tool]
    /// imagepipe's per-image stage times from its manifests: `decode`, `encode`, `store`, `total`.
    public var stages: [String: Percentiles]
    /// With `--rerun`: each imagepipe row's re-run time over its first run's, by row name.
    public var rerunFractions: [String: Double] = [:]

    enum CodingKeys: String, CodingKey {
        case images, corpusBytes = "corpus_bytes", job, workers, runsPerTool = "runs_per_tool", tools, stages
        case rerunFractions = "rerun_fractions"
    }

    /// The human-readable report.
    public var table: String {
        var lines: [String] = []
        lines.append("corpus: \(images) images, \(BatchSummary.formatBytes(corpusBytes)); job: \(job.joined(separator: " + ")); "
                     + "\(workers) workers; \(runsPerTool) alternated runs per tool, medians")
        lines.append("")
        lines.append(pad("tool", 22) + pad("median", 10, right: true) + pad("ratio", 10, right: true)
                     + pad("images/s", 10, right: true) + pad("MB/s", 9, right: true) + pad("peak RSS", 11, right: true))
        for tool in tools {
            guard let median = tool.medianSeconds else {
                lines.append(pad(tool.name, 22) + "skipped: " + (tool.skipped ?? "failed"))
                continue
            }
            let failed = tool.runs.contains { !$0.succeeded } ? "  (some runs failed)" : ""
            lines.append(pad(tool.name, 22)
                         + pad(String(format: "%.2f s", median), 10, right: true)
                         + pad(tool.ratio.map { String(format: "%.2fx", $0) } ?? "-", 10, right: true)
                         + pad(String(format: "%.2f", tool.imagesPerSecond ?? Double(images) / median), 10, right: true)
                         + pad(String(format: "%.1f", tool.megabytesPerSecond ?? Double(corpusBytes) / 1e6 / median), 9, right: true)
                         + pad(BatchSummary.formatBytes(tool.peakResidentBytes ?? 0), 11, right: true) + failed)
        }
        lines.append("")
        lines.append("ratio: the tool's median time over imagepipe's (above 1.00x, imagepipe is faster)")
        if !rerunFractions.isEmpty {
            lines.append("re-run over first run (every output in place): "
                         + rerunFractions.sorted { $0.key < $1.key }.map { String(format: "%@ %.1f%%", $0.key, $0.value * 100) }.joined(separator: ", "))
        }
        if !stages.isEmpty {
            lines.append("imagepipe per image, p50 / p95:")
            for name in ["decode", "encode", "store", "total"] {
                if let stage = stages[name] {
                    lines.append("  " + pad(name == "decode" ? "decode+resize" : name, 15) + String(format: "%8.1f ms / %8.1f ms", stage.p50, stage.p95))
                }
            }
        }
        return lines.joined(separator: "\n")
    }

    /// The report as JSON.
    public var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(self)) ?? Data(), as: UTF8.self)
    }

    private func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
        let padding = String(repeating: " ", count: max(0, width - text.count))
        return right ? padding + text : text + padding
    }
}

extension Array where Element == Double {
    /// The value at quantile `q` (0...1) by nearest rank; nil when empty.
    func quantile(_ q: Double) -> Double? {
        guard !isEmpty else { return nil }
        let sorted = self.sorted()
        let rank = Int((q * Double(sorted.count)).rounded(.up)) - 1
        return sorted[Swift.max(0, Swift.min(sorted.count - 1, rank))]
    }
}
