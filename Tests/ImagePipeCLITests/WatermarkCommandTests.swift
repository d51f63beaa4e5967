// Watermarks through the real binary: the overlay matches Pillow's, it reaches every variant that takes it, and re-runs follow its settings.
import Foundation
import ImagePipe
import ImagePipeTestSupport
import Testing

@Suite(.offThePool) struct WatermarkCommandTests {
    let directory = TemporaryDirectory(prefix: "imagepipe-watermark")

    /// Writes a logo of `width`x`height` with partial alpha: a transparent band on the left, then
    /// alpha rising across it, over colours that change along both sides.
    func writeLogo(_ name: String, width: Int = 60, height: Int = 40, seed: Int = 0) throws -> String {
        let path = directory.url(name)
        _ = try PythonOracle.run(
            """
            import sys
            from PIL import Image
            w, h, seed, path = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
            logo = Image.new('RGBA', (w, h))
            logo.putdata([
                ((x * 255 // w + seed) % 256, 255 - y * 255 // h, (x * y + 64 + seed) % 256,
                 0 if x < w // 6 else min(255, 50 + 200 * x // w))
                for y in range(h) for x in range(w)])
            logo.save(path)
            """, [String(width), String(height), String(seed), path])
        return path
    }

    /// Compares `marked` with `unmarked` (the same variant made without the watermark) around the
    /// logo's box at left, top of width x height: the largest difference outside it, how much
    /// changed inside it (the mean), and, when the logo keeps its own size, the largest and the mean
    /// difference inside from Pillow's own composite of the logo (its alpha times `opacity`) over `unmarked`.
    func compare(
        unmarked: String, marked: String, logo: String, box: (left: Int, top: Int, width: Int, height: Int), opacity: Double
    ) throws -> (outside: Int, changedInside: Double, fromPillow: (max: Double, mean: Double)?) {
        let text = try PythonOracle.run(
            """
            import sys, json
            import numpy as np
            from PIL import Image
            unmarked, marked, logo = sys.argv[1:4]
            left, top, width, height = map(int, sys.argv[4:8])
            opacity = float(sys.argv[8])
            base = Image.open(unmarked).convert('RGB')
            out = Image.open(marked).convert('RGB')
            a, b = np.asarray(base).astype(int), np.asarray(out).astype(int)
            inside = np.zeros(a.shape[:2], bool)
            inside[top:top + height, left:left + width] = True
            result = {
                'outside': int(np.abs(a - b)[~inside].max(initial=0)),
                'changed': float(np.abs(a - b)[inside].mean()),
                'pillow': None,
            }
            mark = Image.open(logo).convert('RGBA')
            if mark.size == (width, height):
                mark.putalpha(mark.getchannel('A').point(lambda v: int(v * opacity + 0.5)))
                expected = base.convert('RGBA')
                expected.alpha_composite(mark, (left, top))
                e = np.asarray(expected.convert('RGB')).astype(int)
                result['pillow'] = [float(np.abs(e - b)[inside].max()), float(np.abs(e - b)[inside].mean())]
            print(json.dumps(result))
            """,
            [unmarked, marked, logo, String(box.left), String(box.top), String(box.width), String(box.height), String(opacity)])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        return (
            try #require(object["outside"] as? Int), try #require(object["changed"] as? Double),
            (object["pillow"] as? [Double]).map { ($0[0], $0[1]) }
        )
    }

    func batch(_ arguments: [String], into destination: String, manifest: Bool = true) throws -> (CommandRunner.Output, [JobResult]) {
        let run = try CommandRunner.run(
            ["batch", directory.url("src"), "--dest", directory.url(destination)]
                + (manifest ? ["--manifest", directory.url(destination + ".jsonl")] : [])
                + arguments)
        #expect(run.status == 0, "\(run.stderr)")
        return (run, manifest ? try ManifestReader.read(directory.url(destination + ".jsonl")) : [])
    }

    /// A 900x600 photo made into a 600x400 PNG: a 60x40 logo kept at its own size (a size of 1 never
    /// enlarges it) lands where its position says, blended as Pillow blends it, and nothing else moves.
    @Test(arguments: [
        (position: "southeast", margin: "12", opacity: 0.5, left: 600 - 12 - 60, top: 400 - 12 - 40),
        // The default margin: 2% of the shorter side, 8 px.
        (position: "northwest", margin: "", opacity: 0.8, left: 8, top: 8),
        (position: "centre", margin: "", opacity: 0.35, left: 270, top: 180),
    ])
    func theOverlayIsPillowsCompositeAndTheRestIsUntouched(position: String, margin: String, opacity: Double, left: Int, top: Int) throws {
        CommandRunner.copyFixture("images/formats/landscape.jpg", to: directory, as: "src/photo.jpg")
        let logo = try writeLogo("logo.png")
        let variant = ["--variant", "p=600x600,png"]
        _ = try batch(variant, into: "plain")
        var options = ["--watermark", logo, "--watermark-position", position, "--watermark-opacity", String(opacity), "--watermark-size", "1"]
        if !margin.isEmpty { options += ["--watermark-margin", margin] }
        let (_, records) = try batch(variant + options, into: "marked")
        #expect(records.first?.variants.first.map { ($0.width, $0.height) } ?? (0, 0) == (600, 400))

        let result = try compare(
            unmarked: directory.url("plain/photo-p.png"), marked: directory.url("marked/photo-p.png"), logo: logo,
            box: (left, top, 60, 40), opacity: opacity)
        #expect(result.outside == 0, "pixels outside the logo changed by up to \(result.outside)")
        #expect(result.changedInside > 10, "the logo shows: \(result.changedInside)")
        let fromPillow = try #require(result.fromPillow)
        #expect(fromPillow.max <= 2, "up to \(fromPillow.max) levels from Pillow's composite")
    }

    /// A logo larger than its share of the output is scaled down to it: a 300x200 logo at the default
    /// fifth of a 600x400 output covers 120x80 in the corner, and nothing else.
    @Test func aLargeLogoIsScaledToItsShareOfTheOutput() throws {
        CommandRunner.copyFixture("images/formats/landscape.jpg", to: directory, as: "src/photo.jpg")
        let logo = try writeLogo("logo.png", width: 300, height: 200)
        _ = try batch(["--variant", "p=600x600,png"], into: "plain")
        _ = try batch(["--variant", "p=600x600,png", "--watermark", logo, "--watermark-margin", "0", "--watermark-opacity", "1"], into: "marked")
        let result = try compare(
            unmarked: directory.url("plain/photo-p.png"), marked: directory.url("marked/photo-p.png"), logo: logo,
            box: (600 - 120, 400 - 80, 120, 80), opacity: 1)
        #expect(result.outside == 0, "pixels outside 120x80 changed by up to \(result.outside)")
        #expect(result.changedInside > 20, "\(result.changedInside)")
    }

    /// An upright 1800x1200 camera JPEG that fits its 2048 px JPEG box is otherwise passed through
    /// (the direct path; the kept original, as its encode is larger): with a watermark it is
    /// encoded with the logo on it. A variant with `nowatermark` is the same file as without `--watermark`.
    @Test func aJPEGThatFitsItsBoxGetsTheLogoAndNowatermarkLeavesAVariantWithout() throws {
        CommandRunner.copyFixture("images/exif-orientation/Landscape_0.jpg", to: directory, as: "src/photo.jpg")
        let logo = try writeLogo("logo.png")
        let mark = ["--watermark", logo, "--watermark-size", "1", "--watermark-margin", "5", "--watermark-opacity", "1"]
        let box = (left: 1800 - 5 - 60, top: 1200 - 5 - 40, width: 60, height: 40)

        // Alone, the variant goes through the direct path; with the thumbnail beside it, through
        // libvips, where it is kept as the original's bytes (smaller than its encode).
        for (name, variants) in [
            ("alone", ["--variant", "big=2048x2048,jpeg,q82"]),
            ("both", ["--variant", "big=2048x2048,jpeg,q82", "--variant", "t=100x100,jpeg,q80,nowatermark"]),
        ] {
            let (_, plainRecords) = try batch(variants, into: name + "-plain")
            let (_, markedRecords) = try batch(variants + mark, into: name + "-marked")
            let big = try #require(markedRecords.first?.variants.first { $0.name == "big" })
            #expect(!big.encoding.keptOriginal && big.encoding.quality == 82, "\(name): \(big)")
            #expect(big.width == 1800 && big.height == 1200)
            if name == "both" {
                let plainBig = try #require(plainRecords.first?.variants.first { $0.name == "big" })
                #expect(plainBig.encoding.keptOriginal, "without a watermark the original is kept")
            }
            let result = try compare(
                unmarked: directory.url("src/photo.jpg"), marked: directory.url(name + "-marked/photo-big.jpg"), logo: logo, box: box,
                opacity: 1)
            #expect(result.changedInside > 30, "\(name): the logo shows (\(result.changedInside))")
            let fromPillow = try #require(result.fromPillow)
            // A JPEG at q82 (chroma halved) of the composite, not the composite itself: far nearer it
            // than the photo without the logo (the PNG test holds it to 2 levels).
            #expect(
                fromPillow.mean < result.changedInside / 4,
                "\(name): \(fromPillow.mean) from Pillow's composite on average, \(result.changedInside) from the photo")
        }
        let plainThumb = try Data(contentsOf: URL(fileURLWithPath: directory.url("both-plain/photo-t.jpg")))
        let markedThumb = try Data(contentsOf: URL(fileURLWithPath: directory.url("both-marked/photo-t.jpg")))
        #expect(plainThumb == markedThumb, "nowatermark makes the variant as without --watermark")
    }

    /// What a re-run does: the same watermark finds its outputs; another opacity (here from a
    /// `--config` file) or another logo makes them again; and variants that take no watermark keep
    /// the outputs made before watermarks existed.
    @Test func aChangedWatermarkRemakesTheVariantsAndAnUnchangedOneIsUpToDate() throws {
        CommandRunner.copyFixture("images/formats/small-400x300.jpg", to: directory, as: "src/photo.jpg")
        let logo = try writeLogo("logo.png")
        let variants = ["--variant", "m=200x200,webp,q70", "--variant", "t=64x64,webp,q60,cover"]
        func status(_ arguments: [String]) throws -> JobResult.Status? {
            try batch(arguments, into: "out").1.first?.status
        }
        #expect(try status(variants) == .done)
        let without = ["--variant", "m=200x200,webp,q70,nowatermark", "--variant", "t=64x64,webp,q60,cover,nowatermark"]
        #expect(try status(without + ["--watermark", logo]) == .skipped, "no variant takes the logo: outputs kept")

        let marked = ["--variant", "m=200x200,webp,q70,watermark=0.3", "--variant", "t=64x64,webp,q60,cover,nowatermark", "--watermark", logo]
        #expect(try status(marked) == .done)
        #expect(try status(marked) == .skipped)
        #expect(try status(marked + ["--watermark-opacity", "0.6"]) == .skipped, "0.6 is the default")

        directory.write("imagepipe.toml", "watermark_opacity = 0.3\n")
        #expect(try status(marked + ["--config", directory.url("imagepipe.toml")]) == .done, "another opacity")
        #expect(try status(marked + ["--config", directory.url("imagepipe.toml")]) == .skipped)

        _ = try writeLogo("logo.png", seed: 1)
        #expect(try status(marked + ["--config", directory.url("imagepipe.toml")]) == .done, "another logo under the same name")
    }

    /// A logo that cannot be read stops the command before any image, naming the file.
    @Test(arguments: ["missing.png", "not-an-image.png"])
    func aLogoThatCannotBeReadIsAConfigurationError(name: String) throws {
        CommandRunner.copyFixture("images/formats/small-200x150.jpg", to: directory, as: "src/photo.jpg")
        directory.write("not-an-image.png", "hello\n")
        let run = try CommandRunner.run(["batch", directory.url("src"), "--dest", directory.url("out"), "--watermark", directory.url(name)])
        #expect(run.status == 2, "\(run.stderr)")
        #expect(run.stderr.contains(directory.url(name)), "\(run.stderr)")
        #expect(directory.files(under: "out").isEmpty)
    }

    /// Watermark settings without a logo are refused, naming them: a forgotten `--watermark` must
    /// not pass unseen. `nowatermark` alone says nothing is drawn, which holds without one.
    @Test func watermarkSettingsWithoutALogoAreRefused() throws {
        CommandRunner.copyFixture("images/formats/small-200x150.jpg", to: directory, as: "src/photo.jpg")
        let base = ["batch", directory.url("src"), "--dest", directory.url("out")]
        let option = try CommandRunner.run(base + ["--watermark-opacity", "0.5"])
        #expect(option.status == 2 && option.stderr.contains("--watermark-opacity set a watermark, but there is no logo"), "\(option.stderr)")
        let variant = try CommandRunner.run(base + ["--variant", "m=100x100,jpeg,q70,watermark=0.3"])
        #expect(variant.status == 2 && variant.stderr.contains("variant m's watermark=0.3"), "\(variant.stderr)")
        #expect(
            try CommandRunner.run(["config", "batch", directory.url("src"), "--dest", directory.url("out"), "--watermark-size", "0.3"]).status == 2)
        #expect(directory.files(under: "out").isEmpty)
        let none = try CommandRunner.run(base + ["--variant", "t=32x32,jpeg,q70,nowatermark"])
        #expect(none.status == 0, "\(none.stderr)")
    }

    /// `imagepipe config` reads the logo as the run does, with the loaders kept from untrusted input
    /// blocked: a logo the run would refuse fails the check too.
    @Test func configRefusesALogoTheRunWouldRefuse() throws {
        CommandRunner.copyFixture("images/formats/small-200x150.jpg", to: directory, as: "src/photo.jpg")
        let svg = directory.write(
            "logo.svg", "<svg xmlns='http://www.w3.org/2000/svg' width='40' height='20'><rect width='40' height='20' fill='red'/></svg>")
        let run = try CommandRunner.run(["batch", directory.url("src"), "--dest", directory.url("out"), "--watermark", svg])
        let check = try CommandRunner.run(["config", "batch", directory.url("src"), "--dest", directory.url("out"), "--watermark", svg])
        #expect(run.status == 2 && check.status == 2, "run: \(run.stderr)\nconfig: \(check.stderr)")
        #expect(check.stderr.contains(svg), "\(check.stderr)")
    }
}
