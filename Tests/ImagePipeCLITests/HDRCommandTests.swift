// HDR originals through the real binary: Ultra HDR JPEG variants in batch and watch, read back by libultrahdr, exiftool and Chromium.
import Foundation
import ImagePipe
import ImagePipeTestSupport
import Testing

/// An iPhone's HEIC and an Ultra HDR JPEG give Ultra HDR JPEG variants (their WebP variants SDR),
/// recorded in the manifest with their headroom, and `--hdr drop` the SDR pictures alone, the same
/// pixels; re-runs follow the policy; a queue worker makes the same; exiftool reads the container's
/// tags and Chromium loads the variants from `srcset` markup.
@Suite(.offThePool) struct HDRCommandTests {
    let directory = TemporaryDirectory(prefix: "imagepipe-hdr-cli")

    static let variants = [
        "--variant", "large=1200x1200,jpeg,q80", "--variant", "thumb=200x200,jpeg,q75,cover", "--variant", "medium=600x600,webp,q75",
    ]
    /// HDRHeadroom 0.8432090282 and HDRGain 0.008020164442 in the iPhone's maker note.
    static let iPhoneHeadroom = exp2(1.8 - 20 * 0.008020164442)

    func copySources() {
        CommandRunner.copyFixture("images/hdr/ultra-hdr.jpg", to: directory, as: "src/ultra-hdr.jpg")
        CommandRunner.copyFixture("images/hdr/iphone-13-pro-max.heic", to: directory, as: "src/iphone.heic")
        CommandRunner.copyFixture("images/formats/landscape.jpg", to: directory, as: "src/plain.jpg")
    }

    /// Runs a batch of `src` into `dest` and returns its manifest's lines by source.
    @discardableResult
    func batch(_ dest: String, _ extra: [String] = [], manifest: String? = nil) throws -> [String: [String: Any]] {
        let manifest = manifest ?? dest + ".jsonl"
        let run = try CommandRunner.run(
            ["batch", directory.url("src"), "--dest", directory.url(dest), "--manifest", directory.url(manifest)] + Self.variants + extra)
        #expect(run.status == 0, "\(run.stderr)")
        var lines: [String: [String: Any]] = [:]
        for line in try String(contentsOfFile: directory.url(manifest), encoding: .utf8).split(separator: "\n") {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            lines[object["source"] as? String ?? ""] = object
        }
        return lines
    }

    func variants(_ line: [String: Any]?) -> [String: [String: Any]] {
        Dictionary(uniqueKeysWithValues: ((line?["variants"] as? [[String: Any]]) ?? []).map { ($0["name"] as? String ?? "", $0) })
    }

    @Test(arguments: ["on", "off"])
    func bothPhonesOriginalsGiveUltraHDRJPEGVariantsWhoseSDRIsTheDroppedOnes(sandbox: String) throws {
        copySources()
        let kept = try batch("out", ["--sandbox", sandbox])
        let dropped = try batch("dropped", ["--sandbox", sandbox, "--hdr", "drop"])
        for (source, kind) in [("ultra-hdr.jpg", "ultra_hdr_jpeg"), ("iphone.heic", "apple_heic")] {
            let gainMap = kept[source]?["gain_map"] as? [String: Any]
            #expect(gainMap?["kind"] as? String == kind && gainMap?["carried"] as? Bool == true, "\(source): \(kept[source] ?? [:])")
            #expect(gainMap?["reason"] == nil, "\(source)")
            let headroom = try #require(gainMap?["headroom"] as? Double, "\(source)")
            if kind == "apple_heic" { #expect(abs(headroom - Self.iPhoneHeadroom) < 1e-6) }
            let made = variants(kept[source])
            #expect(made["large"]?["hdr_headroom"] as? Double == (headroom * 1000).rounded() / 1000, "\(source): \(made)")
            #expect(made["thumb"]?["hdr_headroom"] != nil && made["medium"]?["hdr_headroom"] == nil, "\(source): \(made)")
            let droppedMap = dropped[source]?["gain_map"] as? [String: Any]
            #expect(droppedMap?["carried"] as? Bool == false && (droppedMap?["reason"] as? String)?.contains("--hdr drop") == true)
            #expect(variants(dropped[source]).values.allSatisfy { $0["hdr_headroom"] == nil })
        }
        #expect(kept["plain.jpg"]?["gain_map"] == nil && variants(kept["plain.jpg"]).values.allSatisfy { $0["hdr_headroom"] == nil })

        // libultrahdr reads every JPEG variant of an HDR original as Ultra HDR, and none other.
        let names = ["ultra-hdr", "iphone", "plain"].flatMap { source in ["large.jpg", "thumb.jpg", "medium.webp"].map { "\(source)-\($0)" } }
        let found = try HDROracle.isUltraHDR(names.map { directory.url("out/" + $0) } + names.map { directory.url("dropped/" + $0) })
        let expected = names.map { !$0.hasPrefix("plain") && $0.hasSuffix(".jpg") } + names.map { _ in false }
        #expect(found == expected, "\(zip(names + names, found).filter { $0.1 }.map(\.0))")

        // SDR viewers see the pictures --hdr drop makes, pixel for pixel; the Ultra HDR original's HDR is the source's.
        let items = ["ultra-hdr", "iphone", "plain"].flatMap { source in
            ["large", "thumb"].map { name in
                HDROracle.Item(
                    output: directory.url("out/\(source)-\(name).jpg"), source: directory.url("src/ultra-hdr.jpg"),
                    fraction: name == "large" ? .whole : .cover(source: (400, 300), output: (200, 200)),
                    dropped: directory.url("dropped/\(source)-\(name).jpg"))
            }
        }
        for (item, comparison) in zip(items, try HDROracle.compare(items)) {
            #expect(comparison.sameSDR == true, "\(item.output)")
            guard item.output.contains("ultra-hdr") else { continue }
            #expect(comparison.meanStops <= 0.08 && comparison.p95Stops <= 0.4, "\(item.output): \(comparison)")
        }
    }

    @Test(.requires(.exiftool))
    func exiftoolReadsTheMPFIndexAndTheHDRGainMapMetadataOfBothImages() throws {
        copySources()
        try batch("out")
        let primary = try CommandRunner.run(
            executable: "/usr/bin/exiftool", ["-s", "-s", "-s", "-MPF:NumberOfImages", "-XMP-hdrgm:Version", directory.url("out/iphone-large.jpg")])
        #expect(primary.stdout.split(separator: "\n") == ["2", "1.0"], "\(primary.stdout)")
        // The gain map's own XMP, read from the image the MPF index points to.
        let extracted = try CommandRunner.run(
            executable: "/bin/sh",
            [
                "-c", "exiftool -b -MPImage2 \"$0\" | exiftool -s -s -s -XMP-hdrgm:HDRCapacityMax -XMP-hdrgm:GainMapMax -",
                directory.url("out/iphone-large.jpg"),
            ])
        let numbers = extracted.stdout.split(separator: "\n").compactMap { Double($0) }
        #expect(numbers.count == 2 && numbers.allSatisfy { abs($0 - log2(Self.iPhoneHeadroom)) < 1e-5 }, "\(extracted)")
    }

    @Test func reRunsRemakeTheVariantsTheHDRPolicyChangesAndAnOlderOutputOnce() throws {
        copySources()
        // Made as imagepipe made them before HDR variants: the SDR pictures, their fingerprints as then.
        let before = try batch("out", ["--hdr", "drop"], manifest: "1.jsonl")
        #expect(before.values.allSatisfy { $0["status"] as? String == "done" })
        let now = try batch("out", [], manifest: "2.jsonl")
        #expect(now["ultra-hdr.jpg"]?["status"] as? String == "done" && now["iphone.heic"]?["status"] as? String == "done", "\(now)")
        #expect(now["plain.jpg"]?["status"] as? String == "skipped", "an SDR original's outputs are as they were: \(now["plain.jpg"] ?? [:])")
        #expect(try HDROracle.isUltraHDR([directory.url("out/ultra-hdr-large.jpg"), directory.url("out/iphone-thumb.jpg")]) == [true, true])
        let again = try batch("out", [], manifest: "3.jsonl")
        #expect(again.values.allSatisfy { $0["status"] as? String == "skipped" }, "\(again)")
        let back = try batch("out", ["--hdr", "drop"], manifest: "4.jsonl")
        #expect(back["ultra-hdr.jpg"]?["status"] as? String == "done" && back["plain.jpg"]?["status"] as? String == "skipped")
        #expect(try HDROracle.isUltraHDR([directory.url("out/ultra-hdr-large.jpg")]) == [false])
    }

    @Test func aQueueWorkerMakesTheSameUltraHDRVariants() throws {
        let queue = directory.url("queue")
        InboxDelivery.deliver(Fixtures.data("images/hdr/iphone-13-pro-max.heic"), to: queue + "/inbox", as: "iphone.heic")
        InboxDelivery.deliver(Fixtures.data("images/hdr/ultra-hdr.jpg"), to: queue + "/inbox", as: "ultra-hdr.jpg")
        let run = try CommandRunner.run(
            ["watch", queue, "--dest", directory.url("out"), "--jobs", "1", "--exit-when-empty", "--status-interval", "0"] + Self.variants)
        #expect(run.status == 0, "\(run.stderr)")
        let outputs = ["iphone-large.jpg", "iphone-thumb.jpg", "ultra-hdr-large.jpg", "ultra-hdr-thumb.jpg", "iphone-medium.webp"]
        #expect(try HDROracle.isUltraHDR(outputs.map { directory.url("out/" + $0) }) == [true, true, true, true, false])
    }

    @Test func aWatermarkLiesOnTheSDRPictureOverANeutralGainMap() throws {
        try FileManager.default.createDirectory(atPath: directory.url("src"), withIntermediateDirectories: true)
        let source = directory.url("src/bright.jpg")
        // The bright square fills the middle, where the logo goes.
        try HDROracle.encode(source, width: 600, height: 400, peak: 4, square: (0.2, 0.2, 0.8, 0.8))
        let logo = directory.write("logo.png", Fixtures.data("images/formats/alpha.png"))
        let run = try CommandRunner.run([
            "batch", directory.url("src"), "--dest", directory.url("out"), "--variant", "large=600x600,jpeg,q90", "--watermark", logo,
            "--watermark-position", "centre", "--watermark-size", "0.2",
        ])
        #expect(run.status == 0, "\(run.stderr)")
        // The logo's box as the watermark places it: a fifth of the width, centred.
        let alpha = try CommandRunner.run(executable: "/usr/bin/env", ["python3", "-c", "from PIL import Image; print(*Image.open('\(logo)').size)"])
        let size = alpha.stdout.split(separator: " ").compactMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        let width = 120, height = Int((Double(size[1]) * 120 / Double(size[0])).rounded())
        let box = ((600 - width) / 2 + 4, (400 - height) / 2 + 4, width - 8, height - 8)
        let boost = try HDROracle.boost(directory.url("out/bright-large.jpg"), box: box)
        #expect(abs(boost.inside - 1) < 0.1 && boost.insideMax < 1.3, "no boost under the logo: \(boost)")
        #expect(boost.outsideMax > 2.5, "the square around it is HDR: \(boost)")
    }

    @Test(.requires(.chromium))
    func chromiumLoadsAnUltraHDRVariantFromSrcsetMarkup() throws {
        CommandRunner.copyFixture("images/hdr/iphone-13-pro-max.heic", to: directory, as: "src/iphone.heic")
        let run = try CommandRunner.run([
            "batch", directory.url("src"), "--dest", directory.url("out"), "--manifest", directory.url("m.jsonl"), "--variant",
            "large=1200x1200,jpeg,q80", "--variant", "small=400x400,jpeg,q80",
        ])
        #expect(run.status == 0, "\(run.stderr)")
        let markup = try CommandRunner.run(["srcset", directory.url("m.jsonl"), "--base-url", "file://" + directory.url("out")])
        #expect(markup.status == 0, "\(markup.stderr)")
        #expect(try HDROracle.isUltraHDR([directory.url("out/iphone-large.jpg")]) == [true])
        let page = directory.write(
            "page.html",
            """
            <!DOCTYPE html><html><head><style>body{margin:0}img{display:block;width:100%;height:auto}</style></head><body>
            \(markup.stdout)
            <script>
            const img = document.querySelector('img');
            const report = () => { document.title = 'loaded:' + img.naturalWidth + 'x' + img.naturalHeight + ':' + img.currentSrc; };
            img.addEventListener('error', () => { document.title = 'error:' + img.currentSrc; });
            if (img.complete && img.naturalWidth) report(); else img.addEventListener('load', report);
            </script></body></html>
            """)
        let output = try CommandRunner.run(
            executable: "/usr/bin/chromium",
            [
                "--headless", "--disable-gpu", "--no-sandbox", "--user-data-dir=" + directory.url("profile"), "--window-size=1200,900",
                "--virtual-time-budget=10000", "--dump-dom", "file://" + page,
            ])
        let title = try #require(output.stdout.range(of: #"<title>[^<]*"#, options: .regularExpression), "\(output.stdout.prefix(500))")
        // Decoded (its size is the picture's, 3:4, scaled by srcset's density) and the larger file chosen.
        let fields = output.stdout[title].dropFirst("<title>".count).split(separator: ":", maxSplits: 2)
        #expect(fields.first == "loaded", "\(output.stdout[title])")
        let size = fields.count > 1 ? fields[1].split(separator: "x").compactMap { Int($0) } : []
        #expect(size.count == 2 && size[0] > 0 && size[0] * 4 == size[1] * 3, "\(output.stdout[title])")
        #expect(output.stdout[title].hasSuffix("iphone-large.jpg"), "\(output.stdout[title])")
    }

    @Test(arguments: ["on", "off"])
    func aPQAVIFAndAnHLGHEICGiveToneMappedSDRVariantsAndSaySo(sandbox: String) throws {
        try FileManager.default.createDirectory(atPath: directory.url("src"), withIntermediateDirectories: true)
        try ToneMapOracle.encode(directory.url("src/pq.avif"), container: "avif", transfer: 16, bits: 10)
        try ToneMapOracle.encode(directory.url("src/hlg.heic"), container: "heic", transfer: 18, bits: 10)
        let lines = try batch("out", ["--sandbox", sandbox, "--variant", "full=240x120,png"])
        for (source, kind) in [("pq.avif", "pq"), ("hlg.heic", "hlg")] {
            let gainMap = lines[source]?["gain_map"] as? [String: Any]
            #expect(lines[source]?["status"] as? String == "done" && gainMap?["kind"] as? String == kind, "\(source): \(lines[source] ?? [:])")
            #expect(gainMap?["carried"] as? Bool == false && (gainMap?["reason"] as? String)?.contains("tone mapped") == true, "\(source)")
            // Its brightest, 1,000 cd/m², over SDR white's 203.
            #expect(abs((gainMap?["headroom"] as? Double ?? 0) - 1000 / 203) < 0.25, "\(source): \(gainMap ?? [:])")
            #expect(variants(lines[source]).values.allSatisfy { $0["hdr_headroom"] == nil })
            let name = (source as NSString).deletingPathExtension
            let reading = try ToneMapOracle.read(
                output: directory.url("out/\(name)-full.png"), original: directory.url("src/" + source),
                container: (source as NSString).pathExtension, transfer: kind == "pq" ? 16 : 18, bits: 10)
            #expect(reading.meanError <= 1 && reading.p99Error <= 3, "\(source): \(reading)")
        }
        #expect(try HDROracle.isUltraHDR([directory.url("out/pq-large.jpg"), directory.url("out/hlg-thumb.jpg")]) == [false, false])
    }

    @Test func theReportSaysWhichOriginalsCarryTheirGainMap() throws {
        copySources()
        try batch("out", manifest: "m.jsonl")
        let report = try CommandRunner.run(["report", directory.url("m.jsonl"), "-o", directory.url("report.html")])
        #expect(report.status == 0, "\(report.stderr)")
        let html = try String(contentsOfFile: directory.url("report.html"), encoding: .utf8)
        #expect(html.contains(String(format: "HDR gain map carried (headroom %.2fx)", Self.iPhoneHeadroom)), "\(html.prefix(300))")
        #expect(html.contains(String(format: "HDR %.2fx", Self.iPhoneHeadroom)))
    }
}
