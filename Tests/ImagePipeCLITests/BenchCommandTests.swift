import Foundation
import ImagePipeTestSupport
import Testing

/// `imagepipe bench` on a tiny corpus: the report's shape, not its numbers.
@Suite(.offThePool) struct BenchCommandTests {
    let directory = TemporaryDirectory(prefix: "imagepipe-bench")

    func makeCorpus() {
        CommandRunner.copyFixture("images/formats/landscape.jpg", to: directory, as: "corpus/a.jpg")
        CommandRunner.copyFixture("images/exif-orientation/Landscape_6.jpg", to: directory, as: "corpus/b.jpg")
    }

    @Test func measuresImagepipeAndReportsStagesAsJSON() throws {
        makeCorpus()
        let output = try CommandRunner.run([
            "bench", directory.url("corpus"), "--runs", "2", "--json",
            "--work-dir", directory.url("work"),
        ])
        #expect(output.status == 0, "\(output.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any])
        #expect(report["images"] as? Int == 2)
        let tools = try #require(report["tools"] as? [[String: Any]])
        #expect(tools.map { $0["name"] as? String } == ["imagepipe"])
        let runs = try #require(tools[0]["runs"] as? [[String: Any]])
        #expect(runs.count == 2 && runs.allSatisfy { $0["succeeded"] as? Bool == true })
        #expect(runs.allSatisfy { ($0["peak_rss_bytes"] as? Int ?? 0) > 1_000_000 && ($0["seconds"] as? Double ?? 0) > 0 })
        let median = try #require(tools[0]["median_seconds"] as? Double)
        #expect(median > 0)
        #expect(abs((tools[0]["images_per_second"] as? Double ?? 0) - 2 / median) < 1e-6)
        #expect((tools[0]["mb_per_second"] as? Double ?? 0) > 0)
        #expect((tools[0]["peak_rss_bytes"] as? Int ?? 0) > 1_000_000)
        let stages = try #require(report["stages"] as? [String: [String: Double]])
        for stage in ["decode", "encode", "store"] {
            let percentiles = try #require(stages[stage], "stage \(stage)")
            #expect(percentiles["p50"]! <= percentiles["p95"]!)
        }
    }

    @Test func neighbourWritesBesideTheRunsAndIsGoneAfter() throws {
        makeCorpus()
        let arguments = ["bench", directory.url("corpus"), "--runs", "2", "--neighbour", "--work-dir", directory.url("work")]
        let output = try CommandRunner.run(arguments + ["--json"])
        #expect(output.status == 0, "\(output.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any])
        let neighbour = try #require(report["neighbour"] as? [String: Any], "\(output.stdout)")
        #expect((neighbour["bytes"] as? Int ?? 0) >= 4 << 20, "\(neighbour)")
        #expect(neighbour["failure"] == nil, "\(neighbour)")
        let tools = try #require(report["tools"] as? [[String: Any]])
        #expect(tools.first?["median_seconds"] as? Double ?? 0 > 0)
        #expect(!FileManager.default.fileExists(atPath: directory.url("work") + "/neighbour.dat"), "its file is removed")
        let table = try CommandRunner.run(arguments)
        #expect(table.status == 0, "\(table.stderr)")
        #expect(table.stdout.contains("beside a neighbour writing to the same disk:"), "\(table.stdout)")
    }

    @Test func aLocalAlsoDestIsEmptiedBeforeEachRunSoNoEarlierBenchRunsOutputsAreCheckedInstead() throws {
        makeCorpus()
        let extra = directory.url("shm")
        let arguments = [
            "bench", directory.url("corpus"), "--runs", "1", "--also-dest", extra, "--json", "--work-dir", directory.url("work"),
        ]
        let first = try CommandRunner.run(arguments)
        #expect(first.status == 0, "\(first.stderr)")
        let run = extra + "/out-1-r1"
        #expect(FileManager.default.fileExists(atPath: run + "/a-large.jpg"), "the extra destination's run wrote its outputs there")
        // What an earlier bench run left in the run's folder: outputs found in place would only be
        // checked, and the row would time a re-run. The folder is emptied first, marker and all.
        let marker = directory.write("shm/out-1-r1/left-by-an-earlier-bench-run.txt", "marker")
        let second = try CommandRunner.run(arguments)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(!FileManager.default.fileExists(atPath: marker), "the run's folder was emptied before the run")
        #expect(FileManager.default.fileExists(atPath: run + "/a-large.jpg"), "and written again")
    }

    @Test func alsoUnflushedTimesARunWhoseFlushesNeverReachTheKernel() throws {
        makeCorpus()
        let work = directory.url("work")
        let output = try CommandRunner.run(["bench", directory.url("corpus"), "--runs", "1", "--also-unflushed", "--json", "--work-dir", work])
        #expect(output.status == 0, "\(output.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any])
        let tools = try #require(report["tools"] as? [[String: Any]])
        let row = try #require(tools.first { $0["name"] as? String == "imagepipe, no flushes" }, "\(output.stdout)")
        #expect(row["skipped"] == nil && (row["median_seconds"] as? Double ?? 0) > 0, "\(row)")
        // The library the row ran with: under it a batch makes no flush the kernel sees, and the
        // same batch without it makes its usual ones.
        let library = work + "/scripts/unflushed.so"
        #expect(FileManager.default.fileExists(atPath: library))
        let probe = try CommandRunner.run(executable: "/usr/bin/strace", ["-qq", "-o", "/dev/null", "/bin/true"])
        try #require(probe.status == 0, "strace cannot trace here (make test-deps installs it; ptrace must be allowed): \(probe.stderr)")
        func flushes(preloading: Bool) throws -> String {
            let out = directory.url(preloading ? "unflushed" : "flushed")
            let run = try CommandRunner.run(
                executable: "/usr/bin/strace",
                [
                    "-f", "-qq", "-e", "trace=fsync,fdatasync,syncfs,sync_file_range", "-o", out + ".trace", CommandRunner.binary, "batch",
                    directory.url("corpus"), "--dest", out, "--variant", "small=64x64,jpeg,q80",
                ], environment: preloading ? ["LD_PRELOAD": library] : [:])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(FileManager.default.fileExists(atPath: out + "/a-small.jpg"), "the batch wrote its outputs")
            return try String(contentsOfFile: out + ".trace", encoding: .utf8)
        }
        let calls = ["fsync(", "fdatasync(", "syncfs(", "sync_file_range("]
        let flushed = try flushes(preloading: false)
        #expect(calls.contains { flushed.contains($0) }, "a durable batch flushes (syncfs or fsyncs, by file system)")
        let unflushed = try flushes(preloading: true)
        #expect(!calls.contains { unflushed.contains($0) }, "\(unflushed)")
    }

    @Test func compareRunsOrSkipsEveryPeerWithAReason() throws {
        makeCorpus()
        let output = try CommandRunner.run([
            "bench", directory.url("corpus"), "--compare", "--runs", "1",
            "--variant", "photo=400x400,jpeg,q80", "--work-dir", directory.url("work"),
        ])
        #expect(output.status == 0, "\(output.stderr)")
        for peer in ["imagepipe", "libvips in C", "pyvips", "vipsthumbnail", "pillow", "imagemagick"] {
            let line = output.stdout.split(separator: "\n").first { $0.hasPrefix(peer + " ") }
            let row = try #require(line, "no row for \(peer) in\n\(output.stdout)")
            // Either measured (a ratio) or skipped with the reason.
            #expect(row.contains("x ") || row.contains("skipped: "), "\(row)")
            #expect(!row.contains("some runs failed"), "\(row)")
        }
        #expect(output.stdout.contains("1.00x"))
    }

    @Test func theCReferenceIsBuiltHereAndMakesImagepipesOutputs() throws {
        // The machine that builds imagepipe has what the reference needs (cc, libvips' headers), so
        // it is measured, never skipped; making the same outputs, it writes nearly the same bytes.
        makeCorpus()
        let output = try CommandRunner.run([
            "bench", directory.url("corpus"), "--compare", "--runs", "1", "--json", "--work-dir", directory.url("work"),
        ])
        #expect(output.status == 0, "\(output.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any])
        let tools = try #require(report["tools"] as? [[String: Any]])
        let reference = try #require(tools.first { $0["name"] as? String == "libvips in C" }, "\(tools)")
        #expect(reference["skipped"] == nil, "\(reference)")
        #expect((reference["runs"] as? [[String: Any]])?.allSatisfy { $0["succeeded"] as? Bool == true } == true, "\(reference)")
        let ours = try #require(tools.first?["output_bytes"] as? Int), theirs = try #require(reference["output_bytes"] as? Int)
        #expect(abs(Double(theirs) / Double(ours) - 1) < 0.03, "imagepipe wrote \(ours) bytes, the C reference \(theirs)")
    }

    @Test func aReRunRowTimesTheSecondRunOverTheOutputsTheFirstLeft() throws {
        makeCorpus()
        let output = try CommandRunner.run([
            "bench", directory.url("corpus"), "--runs", "2", "--rerun", "--json",
            "--work-dir", directory.url("work"),
        ])
        #expect(output.status == 0, "\(output.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any])
        let tools = try #require(report["tools"] as? [[String: Any]])
        #expect(tools.map { $0["name"] as? String } == ["imagepipe", "imagepipe re-run"])
        #expect((tools[1]["runs"] as? [[String: Any]])?.count == 2)
        let fraction = try #require((report["rerun_fractions"] as? [String: Double])?["imagepipe"])
        // Reported, not judged: on a loaded machine two images' runs are too short to compare.
        #expect(fraction > 0 && fraction.isFinite)
        // The re-run's manifests say why: every image skipped as up to date.
        let manifests = try FileManager.default.contentsOfDirectory(atPath: directory.url("work/manifests")).sorted()
        let skipped = try manifests.flatMap { name in
            try String(contentsOfFile: directory.url("work/manifests/" + name), encoding: .utf8).split(separator: "\n")
        }.filter { $0.contains("\"skip_code\":\"up_to_date\"") }
        #expect(skipped.count == 4, "2 images in each of 2 re-runs")
    }
}

extension BenchCommandTests {
    @Test func anotherPresetGetsItsOwnRowWithBytesAndScoresPerVariant() throws {
        makeCorpus()
        let output = try CommandRunner.run([
            "bench", directory.url("corpus"), "--runs", "1", "--json", "--also-preset", "web-auto",
            "--work-dir", directory.url("work"),
        ])
        #expect(output.status == 0, "\(output.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any])
        let tools = try #require(report["tools"] as? [[String: Any]])
        #expect(tools.map { $0["name"] as? String } == ["imagepipe", "imagepipe web-auto"])
        for tool in tools {
            let variants = try #require(tool["variants"] as? [[String: Any]], "\(tool)")
            #expect(variants.map { $0["name"] as? String } == ["large", "medium", "thumb"])
            #expect(variants.allSatisfy { ($0["worst_score"] as? Double ?? 0) > 30 && ($0["bytes"] as? Int ?? 0) > 0 })
            #expect((tool["output_bytes"] as? Int ?? 0) == variants.reduce(0) { $0 + ($1["bytes"] as? Int ?? 0) })
        }
        let auto = try #require(tools[1]["variants"] as? [[String: Any]])
        // Each auto variant reaches its target, found in a few encodes.
        for (variant, target) in zip(auto, [67.5, 59.5, 54.5]) {
            #expect((variant["worst_score"] as? Double ?? 0) >= target, "\(variant)")
            #expect((variant["encodes_per_image"] as? Double ?? 0) >= 1)
        }
    }
}
