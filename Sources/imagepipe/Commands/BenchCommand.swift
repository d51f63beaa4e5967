// `imagepipe bench`: the real pipeline over a corpus, optionally side by side with reference tools.
import ArgumentParser
import Foundation
import ImagePipe
import ImagePipeBench

struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Benchmark imagepipe on a corpus, optionally against vipsthumbnail, pyvips, Pillow and ImageMagick.",
        discussion: """
            Every tool runs as its own process over the same corpus doing the same job, alternating, and \
            the report gives median wall times, CPU time per image (user+system of the tool's processes), \
            the ratio of the times to imagepipe's, images/s, MB/s, peak resident memory, and imagepipe's \
            per-image stage times at p50 and p95. Without CORPUS_DIR the corpus in .bench/corpus is used, \
            built first by fixtures/make-corpus.sh when missing.
            """)

    @Argument(help: "A folder of images (default: .bench/corpus, built by fixtures/make-corpus.sh).")
    var corpus: String?

    @Flag(help: "Also run every installed reference tool and print time ratios.")
    var compare = false

    @Flag(help: "Print the report as JSON on standard output.")
    var json = false

    @Option(help: "Runs per tool; the median counts.")
    var runs: Int = 3

    @Option(help: "Workers per tool (one per core unless set).")
    var jobs: Int = ProcessInfo.processInfo.activeProcessorCount

    @Option(name: .customLong("variant"), help: "A variant NAME=WxH,FORMAT,QUALITY[,OPTION...] (repeatable; default: the preset).")
    var variants: [String] = []

    @Option(help: ArgumentHelp("The variants when no --variant is given: \(Preset.names.joined(separator: ", ")).", valueName: "name"))
    var preset: String = "web"

    @Option(
        name: .customLong("also-preset"),
        help: ArgumentHelp(
            "Also time imagepipe with this preset's variants (e.g. web-auto against web), alternated with the others.", valueName: "name"))
    var alsoPresets: [String] = []

    @Flag(
        name: .customLong("also-sandbox-off"),
        help: "Also time imagepipe with --sandbox off (image work inside the worker), alternated with the others: what the helpers cost.")
    var alsoSandboxOff = false

    @Flag(
        name: .customLong("also-facts-none"),
        help: "Also time imagepipe with --facts none (no PDQ hash, palette or provenance), alternated with the others: what the facts cost.")
    var alsoFactsNone = false

    @Option(
        name: .customLong("also-traced"),
        help: ArgumentHelp(
            "Also time imagepipe exporting every job's trace to this OTLP/HTTP collector (e.g. http://127.0.0.1:4318), "
                + "alternated with the others: what tracing costs.",
            valueName: "url"))
    var alsoTraced: String?

    @Flag(
        name: .customLong("also-unflushed"),
        help: ArgumentHelp(
            "Also time imagepipe with its flushes (fsync, fdatasync, syncfs, sync_file_range) made no-ops by a library the "
                + "bench compiles and preloads into that row alone, alternated with the others: what waiting for the disk "
                + "costs, beside the durable runs. Its outputs are not durable; the library is never used outside the bench."))
    var alsoUnflushed = false

    @Flag(
        help: ArgumentHelp(
            "Time every run beside a neighbour writing to the work folder's disk (4 MB writes, an fsync every 32 MB), "
                + "as a database or logs beside a worker would: what flushes cost on a shared disk."))
    var neighbour = false

    @Option(help: "Repeat the corpus this many times (hard links), for long-batch memory checks.")
    var `repeat`: Int = 1

    @Option(
        name: .customLong("also-dest"),
        help: ArgumentHelp(
            "Also time imagepipe storing into this destination (e.g. /dev/shm/bench or s3://bucket/bench). A local folder's "
                + "run folders are emptied before each run; in object storage each bench run writes under a prefix of its own, "
                + "bench-TAG/, left there afterwards."))
    var alsoDest: [String] = []

    @Option(
        name: .customLong("also-queue"),
        help: ArgumentHelp(
            "Also time two `watch --exit-when-empty` workers on this PostgreSQL queue (postgres://USER@HOST:PORT/DB), the corpus "
                + "queued before each run (untimed) into a queue of its own.", valueName: "url"))
    var alsoQueue: String?

    @Option(
        name: .customLong("also-queue-dir"),
        help: ArgumentHelp(
            "Also time `watch --exit-when-empty` on a queue directory in this folder (the work folder's disk, or /dev/shm/DIR for "
                + "tmpfs), its outputs beside it, the corpus copied into its inbox before each run (untimed).", valueName: "dir"))
    var alsoQueueDir: [String] = []

    @Option(
        name: .customLong("also-binary"),
        help: ArgumentHelp(
            "Also time the --also-queue-dir rows with this other imagepipe binary (an earlier build), in the same alternated series.",
            valueName: "path"))
    var alsoBinary: String?

    @Option(
        name: .customLong("remote-corpus"),
        help: ArgumentHelp(
            "The corpus's copy in object storage (e.g. s3://bench/corpus, uploaded beforehand): with --also-dest, also time "
                + "reading the sources from there, by batch and (with --also-queue) by the queue workers.", valueName: "url"))
    var remoteCorpus: String?

    @Flag(help: "Also time a second imagepipe run over the outputs the first left (a re-run with everything in place).")
    var rerun = false

    @Option(name: .customLong("work-dir"), help: "Scratch folder for outputs and scripts.")
    var workDirectory: String = ".bench/work"

    @Option(
        name: .customLong("peers"),
        help: ArgumentHelp(
            "With --compare: the folder of the reference programs (default: Benchmarks/peers of the checkout).", valueName: "dir"))
    var peers: String?

    func validate() throws {
        guard runs >= 1, jobs >= 1, self.repeat >= 1 else { throw ValidationError("--runs, --jobs and --repeat must be positive") }
        guard remoteCorpus == nil || !alsoDest.isEmpty else { throw ValidationError("--remote-corpus needs --also-dest (where its outputs go)") }
        guard alsoBinary == nil || !alsoQueueDir.isEmpty else { throw ValidationError("--also-binary times the --also-queue-dir rows: give one") }
    }

    func run() throws {
        let specs = try Preset.variants(variants, preset: preset)
        var images = try Corpus(directory: try corpusDirectory())
        if self.repeat > 1 {
            images = try images.repeated(self.repeat, into: workDirectory + "/repeated")
        }
        var runner = BenchRunner(
            corpus: images, job: BenchJob(variants: specs, workers: jobs), runs: runs,
            workDirectory: LocalPath.absolute(workDirectory), executable: Self.executablePath(),
            extraDestinations: alsoDest, rerun: rerun,
            extraJobs: try alsoPresets.map { (name) throws(ImagePipeError) in
                ("imagepipe " + name, BenchJob(variants: try Preset.variants([], preset: name), workers: jobs))
            }
                + (alsoSandboxOff
                    ? [("imagepipe --sandbox off", BenchJob(variants: specs, workers: jobs, imagepipeArguments: ["--sandbox", "off"]))] : [])
                + (alsoFactsNone
                    ? [("imagepipe --facts none", BenchJob(variants: specs, workers: jobs, imagepipeArguments: ["--facts", "none"]))] : [])
                + (alsoTraced.map { [("imagepipe traced", BenchJob(variants: specs, workers: jobs, imagepipeArguments: ["--otlp-endpoint", $0]))] }
                    ?? []),
            queue: alsoQueue, remoteCorpus: remoteCorpus, peers: compare ? try peersDirectory() : nil)
        runner.neighbour = neighbour
        runner.queueDirectories = alsoQueueDir.map(LocalPath.absolute)
        runner.otherExecutable = alsoBinary.map(LocalPath.absolute)
        runner.unflushed = alsoUnflushed
        let report = try runner.run(compare: compare) { Console.shared.setStatus($0) }
        Console.shared.setStatus(nil)
        print(json ? report.json : report.table)
    }

    /// The corpus folder, building the default one when needed.
    private func corpusDirectory() throws(ImagePipeError) -> String {
        if let corpus { return corpus }
        let directory = ".bench/corpus"
        if let files = try? FileManager.default.contentsOfDirectory(atPath: directory), !files.isEmpty { return directory }
        let candidates = [
            "fixtures/make-corpus.sh",
            URL(fileURLWithPath: Self.executablePath()).deletingLastPathComponent()
                .appendingPathComponent("../../fixtures/make-corpus.sh").standardizedFileURL.path,
        ]
        guard let script = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw .configuration("no corpus given and fixtures/make-corpus.sh not found; pass CORPUS_DIR")
        }
        Console.shared.line("imagepipe: building the benchmark corpus with \(script)")
        let measurement = ProcessRunner.run([["bash", script, directory]], output: "/dev/stderr")
        guard measurement.succeeded else { throw .configuration("\(script) failed") }
        return directory
    }

    /// The reference programs: `--peers`, or `Benchmarks/peers` of the checkout this binary was
    /// built in or run from. They are measurement tools kept as files a reader can open, not
    /// strings inside the shipped binary.
    private func peersDirectory() throws(ImagePipeError) -> String {
        let candidates =
            peers.map { [$0] } ?? [
                "Benchmarks/peers",
                URL(fileURLWithPath: Self.executablePath()).deletingLastPathComponent()
                    .appendingPathComponent("../../Benchmarks/peers").standardizedFileURL.path,
            ]
        guard let found = candidates.first(where: { FileManager.default.fileExists(atPath: $0 + "/libvips_reference.c") }) else {
            throw .configuration(
                "--compare runs the reference programs of imagepipe's source checkout (Benchmarks/peers); run it there, or give --peers DIR")
        }
        return LocalPath.absolute(found)
    }

    static func executablePath() -> String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }
}
