// The results of a benchmark: per-tool times, CPU and memory, ratios to imagepipe, imagepipe's stage percentiles.
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
        /// Bytes of every output of its last run.
        public var outputBytes: Int?
        /// For imagepipe rows: per variant, bytes and SSIMULACRA 2 scores from a run with `--score`.
        public var variants: [VariantQuality]?
        /// Median over the runs of user plus system CPU time, in seconds.
        public var medianCPUSeconds: Double?
        /// Milliseconds of CPU per image at the median CPU time: what an image costs, whatever
        /// the number of cores the tool kept busy.
        public var cpuMillisecondsPerImage: Double?

        enum CodingKeys: String, CodingKey {
            case name, skipped, runs, medianSeconds = "median_seconds", ratio, peakResidentBytes = "peak_rss_bytes"
            case imagesPerSecond = "images_per_second", megabytesPerSecond = "mb_per_second", outputBytes = "output_bytes", variants
            case medianCPUSeconds = "median_cpu_seconds", cpuMillisecondsPerImage = "cpu_ms_per_image"
        }

        /// The lowest score of any output.
        public var worstScore: Double? { variants?.compactMap(\.worstScore).min() }
    }

    /// One variant's outputs over the corpus: bytes, scores and encodes per image.
    public struct VariantQuality: Sendable, Codable, Equatable {
        /// The variant name.
        public var name: String
        /// Bytes of all its outputs.
        public var bytes: Int
        /// The lowest and median SSIMULACRA 2 score over the images.
        public var worstScore: Double?
        public var medianScore: Double?
        /// Encodes per image, on average (above 1 with `auto`).
        public var encodesPerImage: Double

        enum CodingKeys: String, CodingKey {
            case name, bytes, worstScore = "worst_score", medianScore = "median_score", encodesPerImage = "encodes_per_image"
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
    /// Where every tool's output went: what a failed run said is there.
    public var commandsLog: String?
    /// With `--neighbour`: what the writer beside the runs wrote.
    public var neighbour: NeighbourWriter.Tally?

    enum CodingKeys: String, CodingKey {
        case images, corpusBytes = "corpus_bytes", job, workers, runsPerTool = "runs_per_tool", tools, stages
        case rerunFractions = "rerun_fractions", commandsLog = "commands_log", neighbour
    }

    /// The human-readable report.
    public var table: String {
        var lines: [String] = []
        lines.append(
            "corpus: \(images) images, \(BatchSummary.formatBytes(corpusBytes)); job: \(job.joined(separator: " + ")); "
                + "\(workers) workers; \(runsPerTool) alternated runs per tool, medians")
        if let neighbour {
            lines.append(
                "beside a neighbour writing to the same disk: \(BatchSummary.formatBytes(neighbour.bytes)) in \(NeighbourWriter.blockBytes >> 20) MB writes, "
                    + "\(neighbour.fsyncs) fsyncs" + (neighbour.failure.map { "; it stopped early: \($0)" } ?? ""))
        }
        lines.append("")
        let reference = tools.first?.outputBytes
        let nameWidth = max(22, (tools.map(\.name.count).max() ?? 0) + 2)
        lines.append(
            pad("tool", nameWidth) + pad("median", 10, right: true) + pad("CPU/image", 11, right: true) + pad("ratio", 10, right: true)
                + pad("images/s", 10, right: true) + pad("MB/s", 9, right: true) + pad("peak RSS", 11, right: true)
                + pad("output", 11, right: true) + pad("bytes", 9, right: true) + pad("worst", 8, right: true))
        for tool in tools {
            guard let median = tool.medianSeconds else {
                lines.append(pad(tool.name, nameWidth) + "skipped: " + (tool.skipped ?? "failed"))
                continue
            }
            let failed = tool.runs.contains { !$0.succeeded } ? "  (some runs failed)" : ""
            lines.append(
                pad(tool.name, nameWidth)
                    + pad(String(format: "%.2f s", median), 10, right: true)
                    + pad(cpuPerImage(tool).map { String(format: "%.2f ms", $0) } ?? "-", 11, right: true)
                    + pad(tool.ratio.map { String(format: "%.2fx", $0) } ?? "-", 10, right: true)
                    + pad(String(format: "%.2f", tool.imagesPerSecond ?? Double(images) / median), 10, right: true)
                    + pad(String(format: "%.1f", tool.megabytesPerSecond ?? Double(corpusBytes) / 1e6 / median), 9, right: true)
                    + pad(BatchSummary.formatBytes(tool.peakResidentBytes ?? 0), 11, right: true)
                    + pad(tool.outputBytes.map(BatchSummary.formatBytes) ?? "-", 11, right: true)
                    + pad(Self.change(tool.outputBytes, from: reference), 9, right: true)
                    + pad(tool.worstScore.map { String(format: "%.1f", $0) } ?? "-", 8, right: true) + failed)
        }
        if let log = commandsLog, tools.contains(where: { $0.runs.contains { !$0.succeeded } }) {
            lines.append("some runs failed: what each tool printed, its errors among it, is in \(log)")
        }
        lines.append("")
        lines.append(
            "CPU/image: user+system CPU time of the run's processes over the images, median over runs; "
                + "ratio: the tool's median time over imagepipe's (above 1.00x, imagepipe is faster); output: bytes written, "
                + "bytes: against imagepipe's; worst: the lowest SSIMULACRA 2 score of any output (imagepipe rows, from one more run with --score)")
        let scored = tools.filter { $0.variants != nil }
        if !scored.isEmpty {
            lines.append("per variant: bytes, bytes against the first row, worst / median score, encodes per image")
            // As wide as the longest name, and a space: "imagepipe --sandbox off" is 23 characters.
            let scoredWidth = max(20, (scored.map(\.name.count).max() ?? 0) + 1)
            for tool in scored {
                for variant in tool.variants ?? [] {
                    let first = scored.first?.variants?.first { $0.name == variant.name }?.bytes
                    lines.append(
                        "  " + pad(tool.name, scoredWidth) + pad(variant.name, 10) + pad(BatchSummary.formatBytes(variant.bytes), 10, right: true)
                            + pad(Self.change(variant.bytes, from: first), 9, right: true)
                            + String(
                                format: "   %5.1f / %5.1f   %.2f", variant.worstScore ?? .nan, variant.medianScore ?? .nan,
                                variant.encodesPerImage))
                }
            }
        }
        if !rerunFractions.isEmpty {
            lines.append(
                "re-run over first run (every output in place): "
                    + rerunFractions.sorted { $0.key < $1.key }.map { String(format: "%@ %.1f%%", $0.key, $0.value * 100) }.joined(separator: ", "))
        }
        if !stages.isEmpty {
            lines.append("imagepipe per image, p50 / p95:")
            for name in ["decode", "encode", "store", "total"] {
                if let stage = stages[name] {
                    lines.append(
                        "  " + pad(name == "decode" ? "decode+resize" : name, 15) + String(format: "%8.1f ms / %8.1f ms", stage.p50, stage.p95))
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

    /// A tool's CPU milliseconds per image: as measured, or else from the median of its runs.
    private func cpuPerImage(_ tool: Tool) -> Double? {
        if let measured = tool.cpuMillisecondsPerImage { return measured }
        guard images > 0, let median = tool.runs.map(\.cpuSeconds).quantile(0.5), median > 0 else { return nil }
        return median * 1000 / Double(images)
    }

    /// `-31.2%`: the change from `reference`.
    private static func change(_ value: Int?, from reference: Int?) -> String {
        guard let value, let reference, reference > 0 else { return "-" }
        return String(format: "%+.1f%%", (Double(value) / Double(reference) - 1) * 100)
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
