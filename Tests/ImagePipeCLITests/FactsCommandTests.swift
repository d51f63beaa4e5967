// Image facts through the real binary: PDQ against the reference pdqhash, palettes, provenance, `duplicates`, `report`, `srcset`.
import Foundation
import ImagePipe
import ImagePipeTestSupport
import ImagePipeVipsTestSupport
import Testing

/// Each original's record carries `facts` made by the sandboxed helper from its one decode: a PDQ
/// hash within 16 bits of Meta's reference (PyPI's `pdqhash`) on real photos, a palette of the
/// colours a synthetic picture was painted with, what its container and XMP say of its provenance.
/// `imagepipe duplicates` groups a photo with its resized, recompressed and slightly cropped copies
/// and nothing else.
@Suite(.offThePool) struct FactsCommandTests {
    let directory = TemporaryDirectory(prefix: "imagepipe-facts")

    /// Runs a batch of `folder` into `name/` with its manifest beside it; every record read back.
    func batch(_ folder: String, into name: String, _ extra: [String] = []) throws -> [JobResult] {
        let run = try CommandRunner.run(
            ["batch", folder, "--dest", directory.url(name), "--manifest", directory.url(name + ".jsonl")] + extra)
        #expect(run.status == 0, "\(run.stderr)")
        return try ManifestReader.read(directory.url(name + ".jsonl"))
    }

    /// Makes files in `folder` with Pillow: `script` gets the folder as its first argument.
    func python(_ script: String, _ folder: String) throws {
        _ = try PythonOracle.run(script, [folder])
    }

    /// The reference PDQ hash of an image file, decoded upright by Pillow (HEIC through pillow-heif).
    static func referencePDQ(_ path: String) throws -> (hash: String, quality: Int) {
        let out = try PythonOracle.run(
            """
            import sys, numpy, pdqhash
            from PIL import Image, ImageOps
            import pillow_heif; pillow_heif.register_heif_opener()
            image = ImageOps.exif_transpose(Image.open(sys.argv[1])).convert('RGB')
            bits, quality = pdqhash.compute(numpy.asarray(image))
            print(''.join('%x' % int(''.join(str(b) for b in bits[i:i + 4]), 2) for i in range(0, 256, 4)), quality)
            """, [path])
        let parts = out.split(separator: " ")
        return (String(parts[0]), Int(parts[1].trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1)
    }

    static func distance(_ a: String, _ b: String) -> Int {
        guard let a = PDQDigest(hex: a), let b = PDQDigest(hex: b) else { return 256 }
        return a.distance(to: b)
    }

    @Test func thePDQHashIsWithin16BitsOfTheReferenceOnRealPhotosUprightAndInEveryFormat() throws {
        let photos = [
            "images/exif-orientation/Landscape_1.jpg", "images/exif-orientation/Landscape_6.jpg", "images/formats/landscape.jpg",
            "images/formats/display-p3.jpg", "images/formats/cmyk.jpg", "images/formats/landscape-heic.heic",
            "images/formats/landscape-webp.webp", "images/formats/landscape-png.png", "images/hdr/iphone-13-pro-max.heic",
        ]
        let folder = directory.url("photos")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        for photo in photos {
            try FileManager.default.copyItem(atPath: Fixtures.root + "/" + photo, toPath: folder + "/" + (photo as NSString).lastPathComponent)
        }
        let records = try batch(folder, into: "out")
        #expect(records.count == photos.count)
        var references: [String: (hash: String, quality: Int)] = [:]
        for record in records {
            let pdq = try #require(record.facts?.pdq, "\(record.source) has no PDQ hash: \(record)")
            let reference = try Self.referencePDQ(folder + "/" + record.source)
            references[record.source] = reference
            let distance = Self.distance(pdq.hash, reference.hash)
            #expect(distance <= 16, "\(record.source): \(distance) bits from the reference (\(pdq.hash) against \(reference.hash))")
            #expect(abs(pdq.quality - reference.quality) <= 10, "\(record.source): quality \(pdq.quality), the reference's \(reference.quality)")
        }
        // The facts are of the whole picture whatever the variants: a run making only a square
        // thumbnail (the one decode cropped to it) or a tiny one records the same hashes.
        for variant in ["thumb=320x320,webp,q70,cover", "icon=64x64,jpeg,q80"] {
            let name = String(variant.prefix { $0 != "=" })
            for record in try batch(folder, into: name, ["--variant", variant]) {
                let pdq = try #require(record.facts?.pdq, "\(record.source) with \(variant)")
                let reference = try #require(references[record.source])
                let distance = Self.distance(pdq.hash, reference.hash)
                #expect(distance <= 16, "\(record.source) with \(variant): \(distance) bits from the reference")
                let palette = try #require(record.facts?.palette)
                #expect(!palette.isEmpty, "\(record.source) with \(variant)")
            }
        }
        // The turned original is hashed upright: its hash is its upright twin's, bit for bit near.
        let upright = try #require(records.first { $0.source == "Landscape_1.jpg" }?.facts?.pdq?.hash)
        let turned = try #require(records.first { $0.source == "Landscape_6.jpg" }?.facts?.pdq?.hash)
        #expect(Self.distance(upright, turned) <= 8)
    }

    @Test func duplicatesFindsAPhotosResizedRecompressedAndCroppedCopiesAndNothingElse() throws {
        let folder = directory.url("uploads")
        try FileManager.default.createDirectory(atPath: folder + "/copies", withIntermediateDirectories: true)
        for (fixture, name) in [
            ("images/exif-orientation/Landscape_1.jpg", "original.jpg"), ("images/formats/panorama.jpg", "panorama.jpg"),
            ("images/formats/tall.jpg", "tall.jpg"), ("images/hdr/iphone-13-pro-max.heic", "iphone.heic"),
            ("images/formats/small-400x300.jpg", "small.jpg"),
        ] {
            try FileManager.default.copyItem(atPath: Fixtures.root + "/" + fixture, toPath: folder + "/" + name)
        }
        // The re-uploads: half the size, recompressed hard, and cut by 1% on every side.
        try python(
            """
            import sys
            from PIL import Image
            folder = sys.argv[1]
            image = Image.open(folder + '/original.jpg').convert('RGB')
            w, h = image.size
            image.resize((w // 2, h // 2), Image.LANCZOS).save(folder + '/copies/resized.jpg', quality=85)
            image.save(folder + '/copies/recompressed.jpg', quality=30)
            image.crop((w // 100, h // 100, w - w // 100, h - h // 100)).save(folder + '/copies/cropped.png')
            """, folder)
        let records = try batch(folder, into: "out")
        #expect(records.filter { $0.status == .done }.count == 8, "\(records.map { ($0.source, $0.status) })")

        let text = try CommandRunner.run(["duplicates", directory.url("out.jsonl")])
        #expect(text.status == 0, "\(text.stderr)")
        let lines = text.stdout.split(separator: "\n")
        #expect(lines.count == 1, "one group: \(text.stdout)")
        let members = lines.first.map { $0.split(separator: "\t").dropFirst().map(String.init) } ?? []
        #expect(Set(members) == ["original.jpg", "copies/resized.jpg", "copies/recompressed.jpg", "copies/cropped.png"], "\(text.stdout)")
        let distance = lines.first.flatMap { Int($0.split(separator: "\t")[0]) } ?? 999
        #expect((0...31).contains(distance))
        #expect(text.stderr.contains("1 group of 4 originals among 8 hashed"), "\(text.stderr)")

        // JSON: one object per group, the same members; a stricter distance splits off the crop.
        let json = try CommandRunner.run(["duplicates", "--json", directory.url("out.jsonl")])
        let group = try #require(
            try JSONSerialization.jsonObject(with: Data(json.stdout.split(separator: "\n").first.map(String.init)?.utf8 ?? "".utf8))
                as? [String: Any])
        #expect(Set(group["sources"] as? [String] ?? []) == Set(members))
        #expect(group["largest_distance"] as? Int == distance)
        let strict = try CommandRunner.run(["duplicates", "--max-distance", "0", directory.url("out.jsonl")])
        #expect(!strict.stdout.contains("cropped.png"), "\(strict.stdout)")

        // A distance past the hash's bits is refused; the same manifest given twice counts each file once.
        let bad = try CommandRunner.run(["duplicates", "--max-distance", "300", directory.url("out.jsonl")])
        #expect(bad.status != 0 && bad.stderr.contains("--max-distance"))
        // An earlier run's failure of the same file, recorded first, does not hide the run that hashed it.
        let sha256 = try #require(records.first { $0.source == "original.jpg" }?.sha256)
        let failed = JobResult(source: "original.jpg", status: .failed, error: ImagePipeError(.storageUnavailable, "503"), sha256: sha256)
        let earlier = directory.write("earlier.jsonl", failed.jsonLine() + "\n")
        let retried = try CommandRunner.run(["duplicates", earlier, directory.url("out.jsonl")])
        #expect(retried.stdout.contains("out.jsonl: original.jpg"), "\(retried.stdout)")
        let twice = try CommandRunner.run(["duplicates", directory.url("out.jsonl"), directory.url("out.jsonl")])
        #expect(twice.stdout.split(separator: "\n").count == 1 && twice.stderr.contains("among 8 hashed"), "\(twice.stderr)")
    }

    /// A queue directory's worker records the same facts in `done/`, and `duplicates` reads them
    /// there, beside a manifest.
    @Test func duplicatesReadsAQueueDirectorysDoneRecords() throws {
        let queue = directory.url("queue")
        try FileManager.default.createDirectory(atPath: queue + "/inbox/2024", withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            atPath: Fixtures.root + "/images/exif-orientation/Landscape_1.jpg", toPath: queue + "/inbox/2024/beach.jpg")
        try FileManager.default.copyItem(
            atPath: Fixtures.root + "/images/formats/landscape.jpg", toPath: queue + "/inbox/beach-small.jpg")
        try FileManager.default.copyItem(atPath: Fixtures.root + "/images/formats/panorama.jpg", toPath: queue + "/inbox/panorama.jpg")
        let watch = try CommandRunner.run(["watch", queue, "--dest", directory.url("queue-out"), "--exit-when-empty"])
        #expect(watch.status == 0, "\(watch.stderr)")
        let run = try CommandRunner.run(["duplicates", "--json", queue])
        #expect(run.status == 0, "\(run.stderr)")
        let lines = run.stdout.split(separator: "\n")
        #expect(
            lines.count == 1 && lines[0].hasPrefix("{\"sources\": [\"2024/beach.jpg\", \"beach-small.jpg\"], \"largest_distance\": "), "\(run.stdout)"
        )
        #expect(run.stderr.contains("among 3 hashed"), "\(run.stderr)")
        // A manifest and the queue together: each source named with where it was read.
        _ = try batch(Fixtures.root + "/images/formats/display-p3.jpg", into: "p3")
        let mixed = try CommandRunner.run(["duplicates", queue, directory.url("p3.jsonl")])
        #expect(mixed.stdout.contains("\(queue): 2024/beach.jpg") && mixed.stdout.contains("p3.jsonl: "), "\(mixed.stdout)")
    }

    @Test func thePaletteListsTheColoursAPictureWasPaintedWithMostFrequentFirst() throws {
        let folder = directory.url("painted")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        // Half navy, 30% sand, 20% red, as bands; and the same with noise of ±3 levels, which must
        // merge into the same three colours, not scatter into six.
        try python(
            """
            import sys, random
            from PIL import Image
            random.seed(7)
            for name, noise in (('flat.png', 0), ('noisy.png', 3)):
                image = Image.new('RGB', (400, 300))
                pixels = image.load()
                for y in range(300):
                    colour = (31, 42, 68) if y < 150 else (232, 213, 176) if y < 240 else (200, 30, 40)
                    for x in range(400):
                        pixels[x, y] = tuple(min(255, max(0, c + random.randint(-noise, noise))) for c in colour)
                image.save(sys.argv[1] + '/' + name)
            """, folder)
        let records = try batch(folder, into: "out")
        for record in records {
            let palette = try #require(record.facts?.palette, "\(record.source)")
            #expect(palette.count == 3, "\(record.source): \(palette)")
            let expected: [(Int, Int, Int, Double)] = [(31, 42, 68, 0.5), (232, 213, 176, 0.3), (200, 30, 40, 0.2)]
            for (colour, (r, g, b, share)) in zip(palette, expected) {
                let value = Int(colour.color.dropFirst(), radix: 16) ?? -1
                let (red, green, blue) = (value >> 16, (value >> 8) & 255, value & 255)
                #expect(abs(red - r) <= 3 && abs(green - g) <= 3 && abs(blue - b) <= 3, "\(record.source): \(colour.color) for \(r),\(g),\(b)")
                #expect(abs(colour.share - share) <= 0.02, "\(record.source): \(colour.color) \(colour.share)")
            }
        }
        // srcset --json carries it; the report shows its swatches.
        let srcset = try CommandRunner.run(["srcset", "--json", directory.url("out.jsonl")])
        #expect(srcset.stdout.contains("\"palette\""), "\(srcset.stdout.prefix(400))")
        let page = directory.url("report.html")
        #expect(try CommandRunner.run(["report", directory.url("out.jsonl"), "-o", page]).status == 0)
        let html = try String(contentsOfFile: page, encoding: .utf8)
        #expect(html.contains("class=\"palette\"") && html.contains("background:#"), "no swatches")

        // A manifest edited by hand: a share past any number keeps the page, not the palette.
        let edited = try String(contentsOfFile: directory.url("out.jsonl"), encoding: .utf8)
            .replacing(/"share": ?[0-9.]+/, with: #""share":1e300"#)
        #expect(edited.contains("1e300"))
        _ = directory.write("edited.jsonl", edited)
        let report = try CommandRunner.run(["report", directory.url("edited.jsonl"), "-o", directory.url("edited.html")])
        #expect(report.status == 0, "\(report.stderr)")
    }

    @Test func provenanceTellsContentCredentialsAndTheAILabelWhichSurvivesSafeMetadataWhileGPSDoesNot() throws {
        let folder = directory.url("provenance")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        for name in ["c2pa-signed.jpg", "c2pa-chunk.png", "c2pa-box.avif", "ai-labelled.jpg"] {
            try FileManager.default.copyItem(atPath: Fixtures.root + "/provenance/" + name, toPath: folder + "/" + name)
        }
        try FileManager.default.copyItem(atPath: Fixtures.root + "/images/formats/landscape.jpg", toPath: folder + "/plain.jpg")
        let records = try batch(
            folder, into: "safe", ["--metadata", "safe", "--variant", "large=1024x1024,jpeg,q80", "--variant", "small=320x320,webp,q70"])
        func provenance(_ source: String) -> ImageFacts.Provenance? { records.first { $0.source == source }?.facts?.provenance }
        #expect(provenance("c2pa-signed.jpg")?.c2pa == true)
        #expect(provenance("c2pa-chunk.png")?.c2pa == true)
        #expect(provenance("c2pa-box.avif")?.c2pa == true)
        #expect(provenance("plain.jpg") == ImageFacts.Provenance(c2pa: false))
        let label = "http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia"
        #expect(provenance("ai-labelled.jpg") == ImageFacts.Provenance(c2pa: false, digitalSourceType: label))

        // exiftool, reading the JUMBF boxes itself, agrees on the JPEGs and the PNG (it reads no
        // C2PA box in an AVIF); and no variant carries the store, which would not match its pixels.
        let exiftool = try RequiredTool.exiftool.located()
        for record in records where !record.source.hasSuffix(".avif") {
            let labels = try CommandRunner.run(executable: exiftool, ["-a", "-s", "-s", "-s", "-JUMBF:JUMDLabel", folder + "/" + record.source])
            let says = labels.stdout.split(separator: "\n").contains { $0 == "c2pa" }
            #expect(record.facts?.provenance?.c2pa == says, "\(record.source): exiftool's labels \(labels.stdout)")
            for variant in record.variants {
                let carried = try CommandRunner.run(
                    executable: exiftool, ["-a", "-s", "-s", "-s", "-JUMBF:JUMDLabel", directory.url("safe/" + variant.key)])
                #expect(carried.stdout.isEmpty, "\(variant.key) carries JUMBF: \(carried.stdout)")
            }
        }

        // The outputs of --metadata safe keep the label (exiftool reads it), and not the GPS or the creator.
        let labelled = try #require(records.first { $0.source == "ai-labelled.jpg" })
        for variant in labelled.variants {
            let read = try CommandRunner.run(
                executable: exiftool,
                ["-s", "-s", "-s", "-XMP-iptcExt:DigitalSourceType", "-GPS:all", "-XMP-dc:Creator", directory.url("safe/" + variant.key)])
            #expect(read.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == label, "\(variant.key): \(read.stdout)")
        }
        // A WebP variant, which libvips saves (a JPEG at the original's size would take libjpeg's
        // direct path, which writes no metadata whatever the policy).
        let stripped = try batch(folder, into: "strip", ["--variant", "large=1024x1024,webp,q80"])
        let strippedOutput = try #require(stripped.first { $0.source == "ai-labelled.jpg" }?.variants.first)
        let read = try CommandRunner.run(executable: exiftool, ["-s", "-s", "-s", "-XMP:all", directory.url("strip/" + strippedOutput.key)])
        #expect(read.stdout.isEmpty, "strip keeps no XMP: \(read.stdout)")

        // The report marks the AI-made original and the ones with credentials.
        let page = directory.url("report.html")
        #expect(try CommandRunner.run(["report", directory.url("safe.jsonl"), "-o", page]).status == 0)
        let html = try String(contentsOfFile: page, encoding: .utf8)
        #expect(html.components(separatedBy: "AI-made: trainedAlgorithmicMedia").count == 2)
        #expect(html.components(separatedBy: "Content Credentials").count == 4)
    }

    @Test func factsNoneMakesNoneAndAListMakesOnlyThose() throws {
        let folder = Fixtures.root + "/images/exif-orientation"
        let none = try batch(folder, into: "none", ["--facts", "none"]).filter { $0.status == .done }
        #expect(none.count == 9 && none.allSatisfy { $0.facts == nil && $0.placeholder != nil })
        let some = try batch(folder, into: "some", ["--facts", "pdq"]).filter { $0.status == .done }
        #expect(some.count == 9 && some.allSatisfy { $0.facts?.pdq != nil && $0.facts?.palette == nil && $0.facts?.provenance == nil })
        let bad = try CommandRunner.run(["batch", folder, "--dest", directory.url("bad"), "--facts", "pdq,colour"])
        #expect(bad.status == 2 && bad.stderr.contains("unknown fact 'colour'"), "\(bad.stderr)")
    }
}
