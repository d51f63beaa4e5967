// Runs imagepipe and its peers over one corpus, alternating them, and gathers the report.
import Foundation
public import ImagePipe
import Synchronization

/// A side-by-side benchmark of whole-batch wall time and memory.
public struct BenchRunner: Sendable {
    /// The corpus.
    public var corpus: Corpus
    /// The job every tool does.
    public var job: BenchJob
    /// Runs per tool; the median counts.
    public var runs: Int
    /// Scratch space for outputs, manifests and scripts.
    public var workDirectory: String
    /// The imagepipe executable to measure.
    public var executable: String
    /// Extra imagepipe destinations to measure besides local storage (e.g. an S3 bucket); each round
    /// writes under a prefix of its own, so no round finds the previous one's outputs in place.
    public var extraDestinations: [String]
    /// Whether to time, right after each imagepipe run, the same command again over the outputs it
    /// left: a re-run that finds everything in place.
    public var rerun: Bool
    /// Other jobs imagepipe is timed with besides ``job``, by row name (`--also-preset web-auto`).
    public var extraJobs: [(name: String, job: BenchJob)]
    /// A PostgreSQL queue (`postgres://...`) to also time two `watch` workers on, against `batch`.
    public var queue: String?
    /// Folders to also time `watch` on a queue directory in (``Peer/imagepipeQueueDirectory(executable:job:directory:label:)``):
    /// on the work folder's disk and on tmpfs, say.
    public var queueDirectories: [String] = []
    /// Another imagepipe binary (an earlier build) to time the ``queueDirectories`` rows with too.
    public var otherExecutable: String?
    /// The corpus's copy in object storage (`s3://bucket/prefix`): with an extra destination, also
    /// time reading the sources from there (batch, and the queue workers when ``queue`` is set).
    public var remoteCorpus: String?
    /// The folder of the reference programs a comparison runs (`Benchmarks/peers` in a checkout):
    /// measurement tools, not part of the shipped binary.
    public var peers: String?
    /// Whether every run is timed beside a ``NeighbourWriter`` writing to the work folder's disk.
    public var neighbour = false
    /// Whether imagepipe is also timed with its flushes made no-ops (``Peer/imagepipeUnflushed(executable:job:scriptDirectory:manifest:)``).
    public var unflushed = false

    /// Creates a runner.
    public init(
        corpus: Corpus, job: BenchJob, runs: Int, workDirectory: String, executable: String, extraDestinations: [String] = [],
        rerun: Bool = false, extraJobs: [(name: String, job: BenchJob)] = [], queue: String? = nil, remoteCorpus: String? = nil,
        peers: String? = nil
    ) {
        self.corpus = corpus
        self.job = job
        self.runs = max(1, runs)
        self.workDirectory = workDirectory
        self.executable = executable
        self.extraDestinations = extraDestinations
        self.rerun = rerun
        self.extraJobs = extraJobs
        self.queue = queue
        self.remoteCorpus = remoteCorpus
        self.peers = peers
    }

    /// Measures imagepipe alone, or with `compare` every installed peer too, in alternating order.
    public func run(compare: Bool, progress: (String) -> Void = { _ in }) throws(ImagePipeError) -> BenchReport {
        let scripts = workDirectory + "/scripts"
        // The peers are copied next to what the comparison compiles, so a checkout stays untouched.
        do {
            try FileManager.default.createDirectory(atPath: scripts, withIntermediateDirectories: true)
            if compare {
                guard let peers else { throw ImagePipeError.configuration("--compare needs the reference programs (--peers DIR)") }
                for name in ["pyvips_job.py", "pillow_job.py", "libvips_reference.c"] {
                    try? FileManager.default.removeItem(atPath: scripts + "/" + name)
                    try FileManager.default.copyItem(atPath: peers + "/" + name, toPath: scripts + "/" + name)
                }
            }
        } catch let error as ImagePipeError {
            throw error
        } catch {
            throw .configuration("cannot copy the reference programs into \(scripts): \(IOErrorText.reason(of: error))")
        }
        let manifests = workDirectory + "/manifests"
        try? FileManager.default.createDirectory(atPath: manifests, withIntermediateDirectories: true)
        let counter = ManifestCounter(directory: manifests)

        let invocation = Peer.newInvocationTag()
        var peers = [Peer.imagepipe(executable: executable, job: job, destination: nil, manifest: counter.next)]
        for destination in extraDestinations {
            peers.append(
                .imagepipe(
                    executable: executable, job: job, destination: destination,
                    label: "imagepipe → \(destination.prefix(while: { $0 != ":" }))", invocation: invocation, manifest: { _ in "/dev/null" }))
        }
        if let queue {
            peers.append(
                .imagepipeQueue(
                    executable: executable, job: job, queue: queue, workers: 2, destination: nil,
                    label: "imagepipe watch ×2 (postgres)"))
        }
        if let remoteCorpus, let destination = extraDestinations.first {
            let scheme = destination.prefix(while: { $0 != ":" })
            peers.append(
                .imagepipe(
                    executable: executable, job: job, destination: destination,
                    label: "imagepipe \(remoteCorpus.prefix(while: { $0 != ":" })) → \(scheme)",
                    remoteCorpus: remoteCorpus, invocation: invocation, manifest: { _ in "/dev/null" }))
            if let queue {
                peers.append(
                    .imagepipeQueue(
                        executable: executable, job: job, queue: queue, workers: 2, destination: destination,
                        remoteCorpus: remoteCorpus, invocation: invocation,
                        label: "imagepipe watch ×2 (postgres) \(remoteCorpus.prefix(while: { $0 != ":" })) → \(scheme)"))
            }
        }
        peers += Peer.imagepipeQueueDirectories(executable: executable, other: otherExecutable, job: job, directories: queueDirectories)
        for (name, extra) in extraJobs {
            peers.append(.imagepipe(executable: executable, job: extra, destination: nil, label: name, manifest: { _ in "/dev/null" }))
        }
        if unflushed {
            peers.append(.imagepipeUnflushed(executable: executable, job: job, scriptDirectory: scripts, manifest: { _ in "/dev/null" }))
        }
        // Each imagepipe row's re-run row, run right after it over the same outputs.
        var reruns: [Int: Int] = [:]
        if rerun {
            for index in peers.indices {
                reruns[index] = peers.count
                peers.append(peers[index].renamed(peers[index].name + " re-run"))
            }
        }
        if compare {
            peers += [
                .libvipsC(scriptDirectory: scripts, job: job), .pyvips(scriptDirectory: scripts, job: job), .vipsthumbnail(job: job),
                .pillow(scriptDirectory: scripts, job: job), .imagemagick(job: job),
            ]
        }
        let runnable = peers.indices.filter { peers[$0].unavailable == nil && !reruns.values.contains($0) }
        var measurements = Array(repeating: [RunMeasurement](), count: peers.count)
        var outputBytes = [Int?](repeating: nil, count: peers.count)
        let log = workDirectory + "/commands.log"
        var finishedOutputs: [String] = []
        // Outputs go only once every run is over: on ext4 without a journal, creating files just
        // after thousands were deleted costs extra (inode allocation steps over recently freed
        // inodes), which raised whichever tool ran next by up to 1 ms of system time per small image.
        defer { for output in finishedOutputs { try? FileManager.default.removeItem(atPath: output) } }
        // Started before the first run and stopped after the last, so every tool runs beside it alike.
        let writer = neighbour ? NeighbourWriter(directory: workDirectory) : nil
        var neighbourTally: NeighbourWriter.Tally?
        defer { if neighbourTally == nil { writer?.stop() } }

        for round in 0..<runs {
            // Rotate the order each round so no tool always runs first on a cold page cache or last on a hot one.
            let order = runnable.indices.map { runnable[($0 + round) % runnable.count] }
            for index in order {
                let output = workDirectory + "/out-\(index)-r\(round + 1)"
                try? FileManager.default.removeItem(atPath: output)
                try? FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
                if let extra = peers[index].extraFolder?(output) { try? FileManager.default.removeItem(atPath: extra) }
                for measured in [index] + (reruns[index].map { [$0] } ?? []) {
                    if let setup = peers[measured].setup?(corpus, output) {
                        progress("round \(round + 1)/\(runs): preparing \(peers[measured].name)")
                        guard ProcessRunner.run(setup, environment: peers[measured].environment, output: log).succeeded else {
                            throw .configuration("preparing \(peers[measured].name) failed; see \(log)")
                        }
                    }
                    let (commands, parallel) = peers[measured].commands(corpus, output)
                    progress("round \(round + 1)/\(runs): \(peers[measured].name)")
                    let measurement = ProcessRunner.run(commands, parallel: parallel, environment: peers[measured].environment, output: log)
                    measurements[measured].append(measurement)
                }
                if peers[index].outputIsLocal { outputBytes[index] = Self.bytes(under: output) }
                finishedOutputs.append(output)
                // Kept outputs are written back now, untimed, not during the next tool's run.
                sync()
            }
        }

        neighbourTally = writer?.stop()
        let reference = measurements[0].map(\.seconds).quantile(0.5)
        let tools = peers.indices.map { index -> BenchReport.Tool in
            let runs = measurements[index]
            let median = runs.map(\.seconds).quantile(0.5)
            let medianCPU = runs.map(\.cpuSeconds).quantile(0.5)
            return BenchReport.Tool(
                name: peers[index].name, skipped: peers[index].unavailable, runs: runs, medianSeconds: median,
                ratio: median.flatMap { value in reference.map { value / $0 } },
                peakResidentBytes: runs.map(\.peakResidentBytes).max(),
                imagesPerSecond: median.map { Double(corpus.files.count) / $0 },
                megabytesPerSecond: median.map { Double(corpus.bytes) / 1e6 / $0 },
                outputBytes: outputBytes[index],
                variants: runnable.contains(index) ? scoredRun(peers[index], index: index, progress: progress) : nil,
                medianCPUSeconds: medianCPU,
                cpuMillisecondsPerImage: medianCPU.map { $0 * 1000 / Double(max(1, corpus.files.count)) })
        }
        var report = BenchReport(
            images: corpus.files.count, corpusBytes: corpus.bytes, job: job.variants.map(\.specString),
            workers: job.workers, runsPerTool: runs, tools: tools, stages: Self.stages(from: counter.paths))
        report.neighbour = neighbourTally
        report.commandsLog = workDirectory + "/commands.log"
        for (first, again) in reruns.sorted(by: { $0.key < $1.key }) {
            if let base = tools[first].medianSeconds, let rerun = tools[again].medianSeconds, base > 0 {
                report.rerunFractions[tools[first].name] = rerun / base
            }
        }
        return report
    }

    /// One untimed run of an imagepipe row with `--score`, summarised per variant from its manifest.
    private func scoredRun(_ peer: Peer, index: Int, progress: (String) -> Void) -> [BenchReport.VariantQuality]? {
        guard let command = peer.scoredCommand else { return nil }
        let output = workDirectory + "/scored-\(index)", manifest = workDirectory + "/scored-\(index).jsonl"
        try? FileManager.default.removeItem(atPath: output)
        progress("scoring the outputs of \(peer.name)")
        guard ProcessRunner.run([command(corpus, output, manifest)], output: workDirectory + "/commands.log").succeeded else { return nil }
        try? FileManager.default.removeItem(atPath: output)
        return Self.variantQuality(fromManifest: manifest)
    }

    /// Bytes, scores and encodes per variant from a manifest, in the order the variants first appear.
    static func variantQuality(fromManifest path: String) -> [BenchReport.VariantQuality] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [] }
        var order: [String] = []
        var records: [String: [VariantRecord]] = [:]
        for line in text.split(separator: "\n") {
            guard let result = try? JSONDecoder().decode(JobResult.self, from: Data(line.utf8)), result.status == .done else { continue }
            for variant in result.variants {
                if records[variant.name] == nil { order.append(variant.name) }
                records[variant.name, default: []].append(variant)
            }
        }
        return order.map { name in
            let made = records[name] ?? []
            let scores = made.compactMap(\.encoding.score)
            return BenchReport.VariantQuality(
                name: name, bytes: made.reduce(0) { $0 + $1.bytes }, worstScore: scores.min(), medianScore: scores.quantile(0.5),
                encodesPerImage: Double(made.reduce(0) { $0 + ($1.encoding.encodes ?? 1) }) / Double(max(1, made.count)))
        }
    }

    /// Bytes of the files under a folder.
    static func bytes(under directory: String) -> Int {
        guard let files = FileManager.default.enumerator(atPath: directory) else { return 0 }
        var total = 0
        for case let file as String in files {
            total += (try? FileManager.default.attributesOfItem(atPath: directory + "/" + file)[.size] as? Int) ?? 0
        }
        return total
    }

    /// Per-image stage percentiles from imagepipe's manifests.
    static func stages(from manifests: [String]) -> [String: BenchReport.Percentiles] {
        var decode: [Double] = [], encode: [Double] = [], store: [Double] = [], total: [Double] = []
        let decoder = JSONDecoder()
        for path in manifests {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { continue }
            for line in text.split(separator: "\n") {
                guard let result = try? decoder.decode(JobResult.self, from: Data(line.utf8)), result.status == .done else { continue }
                decode.append(result.timings.decodeMs)
                encode.append(result.timings.encodeMs)
                store.append(result.timings.storeMs)
                total.append(result.timings.totalMs)
            }
        }
        var stages: [String: BenchReport.Percentiles] = [:]
        for (name, values) in [("decode", decode), ("encode", encode), ("store", store), ("total", total)] {
            if let p50 = values.quantile(0.5), let p95 = values.quantile(0.95) {
                stages[name] = BenchReport.Percentiles(p50: p50, p95: p95)
            }
        }
        return stages
    }
}

/// Hands out one manifest path per imagepipe run and remembers them.
private final class ManifestCounter: Sendable {
    private let directory: String
    private let state = Mutex<[String]>([])

    init(directory: String) { self.directory = directory }

    var paths: [String] { state.withLock { $0 } }

    @Sendable func next(_ output: String) -> String {
        state.withLock { paths in
            let path = directory + "/run-\(paths.count + 1).jsonl"
            paths.append(path)
            return path
        }
    }
}
