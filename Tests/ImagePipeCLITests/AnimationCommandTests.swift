// Animated sources through the real binary: moving WebP outputs, re-runs that remake only what changed, and the frame budget.
import Foundation
import ImagePipe
import ImagePipeTestSupport
import Testing

@Suite(.offThePool) struct AnimationCommandTests {
    let directory = TemporaryDirectory(prefix: "imagepipe-animation-cli")

    func batch(_ source: String, _ arguments: [String], into destination: String) throws -> (CommandRunner.Output, [String: JobResult]) {
        let manifest = directory.url(destination + "-\(UUID().uuidString).jsonl")
        let run = try CommandRunner.run(
            ["batch", directory.url(source), "--dest", directory.url(destination), "--manifest", manifest] + arguments)
        let results = try ManifestReader.read(manifest)
        return (run, Dictionary(results.map { ($0.source, $0) }, uniquingKeysWith: { $1 }))
    }

    /// The frames Pillow reads in an output.
    func frames(_ path: String) throws -> Int {
        let text = try PythonOracle.run(
            "import sys\nfrom PIL import Image\nprint(getattr(Image.open(sys.argv[1]), 'n_frames', 1))", [directory.url(path)])
        return Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    /// The `web` preset moves an animated GIF's WebP variants and keeps its JPEG still; a re-run
    /// remakes nothing, of the animation or of a photo. Adding `still` changes no photo's outputs (its
    /// fingerprint is the same), but the animation's WebP variants are made again, still.
    @Test func webPresetMovesAndReRunsRemakeOnlyWhatChanged() throws {
        CommandRunner.copyFixture("images/formats/animated.gif", to: directory, as: "src/anim.gif")
        CommandRunner.copyFixture("images/formats/landscape.jpg", to: directory, as: "src/photo.jpg")
        let (first, made) = try batch("src", [], into: "out")
        #expect(first.status == 0, "\(first.stderr)")
        #expect(made["anim.gif"]?.status == .done && made["photo.jpg"]?.status == .done, "\(made)")
        #expect(try frames("out/anim-medium.webp") == 3 && frames("out/anim-thumb.webp") == 3)
        #expect(try frames("out/anim-large.jpg") == 1)
        // The manifest says what each output holds, as the compressor made it.
        let recorded = Dictionary(uniqueKeysWithValues: (made["anim.gif"]?.variants ?? []).map { ($0.name, $0.encoding.frames) })
        #expect(recorded == ["large": 1, "medium": 3, "thumb": 3], "\(made)")

        let (_, again) = try batch("src", [], into: "out")
        #expect(again.values.allSatisfy { $0.status == .skipped && $0.skipCode == .upToDate }, "\(again)")

        let still = ["large=2048x2048,jpeg,q82", "medium=1024x1024,webp,q78,still", "thumb=320x320,webp,q70,cover,still"]
        let (_, stilled) = try batch("src", still.flatMap { ["--variant", $0] }, into: "out")
        #expect(stilled["photo.jpg"]?.status == .skipped && stilled["photo.jpg"]?.skipCode == .upToDate, "\(stilled)")
        #expect(stilled["anim.gif"]?.status == .done, "\(stilled)")
        #expect(try frames("out/anim-medium.webp") == 1)
    }

    /// A GIF variant of an animated source is an animated GIF; of a photo, a still one.
    @Test func gifVariantsMove() throws {
        CommandRunner.copyFixture("images/formats/animated-webp.webp", to: directory, as: "src/anim.webp")
        CommandRunner.copyFixture("images/formats/landscape.jpg", to: directory, as: "src/photo.jpg")
        let (run, made) = try batch("src", ["--variant", "g=100x,gif"], into: "out")
        #expect(run.status == 0 && made.values.allSatisfy { $0.status == .done }, "\(run.stderr) \(made)")
        #expect(try frames("out/anim-g.gif") == 3 && frames("out/photo-g.gif") == 1)
        #expect(made["anim.webp"]?.variants.first?.format == .gif && made["anim.webp"]?.variants.first?.width == 100)
    }

    /// The frame budget, checked before decoding: 400 frames on a 2000x2000 canvas (6.4 GB decoded)
    /// fail with `image_too_large` naming the numbers; 1500 tiny frames fail on `--max-frames`
    /// unless it is raised. The other files of the batch are made, and a dry run foresees it all.
    @Test func frameBudgetRefusesBeforeDecoding() throws {
        try FileManager.default.createDirectory(atPath: directory.url("src"), withIntermediateDirectories: true)
        try ManyFrameGIF.make(frames: 400, width: 2000, height: 2000).write(to: URL(fileURLWithPath: directory.url("src/huge.gif")))
        try ManyFrameGIF.make(frames: 1500, width: 4, height: 4).write(to: URL(fileURLWithPath: directory.url("src/long.gif")))
        CommandRunner.copyFixture("images/formats/animated.gif", to: directory, as: "src/fine.gif")
        // A dry run predicts both from the header.
        let dry = try CommandRunner.run(["batch", directory.url("src"), "--dest", directory.url("out"), "--dry-run"])
        let lines = dry.stdout.split(separator: "\n")
        #expect(
            lines.contains { $0.hasPrefix("fail") && $0.contains("huge.gif") && $0.contains("400 frames") && $0.hasSuffix("[image_too_large]") },
            "\(dry.stdout)")
        #expect(lines.contains { $0.hasPrefix("fail") && $0.contains("long.gif") && $0.contains("--max-frames") }, "\(dry.stdout)")
        #expect(lines.contains { $0.hasPrefix("write") && $0.contains("fine.gif") }, "\(dry.stdout)")
        let (run, results) = try batch("src", [], into: "out")
        #expect(run.status != 0)
        let huge = try #require(results["huge.gif"]), long = try #require(results["long.gif"])
        #expect(huge.status == .failed && huge.errorCode == .imageTooLarge, "\(huge)")
        #expect(huge.error?.contains("400 frames of 2000x2000") == true && huge.error?.contains("--max-pixels") == true, "\(huge)")
        #expect(long.status == .failed && long.errorCode == .imageTooLarge && long.error?.contains("--max-frames") == true, "\(long)")
        #expect(results["fine.gif"]?.status == .done)

        let (raised, after) = try batch("src", ["--max-frames", "2000"], into: "out")
        #expect(after["long.gif"]?.status == .done, "\(raised.stderr) \(after)")
        #expect(try frames("out/long-medium.webp") == 1500)
    }

    /// A watermark lands on every frame at its place, and a crop at a compass point is taken at the
    /// same place on every frame. The frames are 120x80, their left half each its own colour and their
    /// right half grey; the logo a solid 24x16 magenta, drawn opaque in the south-east corner.
    @Test func watermarkAndCropApplyToEveryFrame() throws {
        try FileManager.default.createDirectory(atPath: directory.url("src"), withIntermediateDirectories: true)
        let colours = [[230, 30, 30], [30, 200, 40], [40, 50, 220], [240, 220, 20]]
        _ = try PythonOracle.run(
            """
            import sys, json
            from PIL import Image
            frames = []
            for colour in json.loads(sys.argv[2]):
                frame = Image.new('RGB', (120, 80), (128, 128, 128))
                frame.paste(tuple(colour), (0, 0, 60, 80))
                frames.append(frame)
            frames[0].save(sys.argv[1], save_all=True, append_images=frames[1:], duration=100, loop=0)
            Image.new('RGB', (24, 16), (255, 0, 255)).save(sys.argv[3])
            """, [directory.url("src/anim.gif"), "\(colours)", directory.url("logo.png")])
        let (run, made) = try batch(
            "src",
            [
                "--variant", "m=200x200,webp,lossless", "--variant", "c=60x80,webp,lossless,cover,west,nowatermark",
                "--watermark", directory.url("logo.png"), "--watermark-margin", "0", "--watermark-opacity", "1",
            ], into: "out")
        #expect(run.status == 0 && made["anim.gif"]?.status == .done, "\(run.stderr) \(made)")
        let text = try PythonOracle.run(
            """
            import sys, json
            from PIL import Image
            result = {}
            for name, points in (('m', [(30, 20), (110, 72), (90, 20)]), ('c', [(45, 40), (5, 5)])):
                im = Image.open(sys.argv[1] + '/anim-' + name + '.webp')
                frames = []
                for k in range(im.n_frames):
                    im.seek(k)
                    rgb = im.convert('RGB')
                    frames.append([list(rgb.getpixel(p)) for p in points])
                result[name] = {'size': list(im.size), 'frames': frames}
            print(json.dumps(result))
            """, [directory.url("out")])
        struct Output: Decodable { var size: [Int], frames: [[[Int]]] }
        let outputs = try JSONDecoder().decode([String: Output].self, from: Data(text.utf8))
        let marked = try #require(outputs["m"]), cropped = try #require(outputs["c"])
        #expect(marked.size == [120, 80] && cropped.size == [60, 80])
        #expect(marked.frames.count == 4 && cropped.frames.count == 4)
        func near(_ a: [Int], _ b: [Int]) -> Bool { zip(a, b).allSatisfy { abs($0 - $1) <= 6 } }
        for (index, colour) in colours.enumerated() where index < marked.frames.count && index < cropped.frames.count {
            let m = marked.frames[index], c = cropped.frames[index]
            #expect(near(m[0], colour) && near(m[1], [255, 0, 255]) && near(m[2], [128, 128, 128]), "frame \(index): \(m)")
            // West: the crop keeps the left 60 columns, all this frame's colour.
            #expect(near(c[0], colour) && near(c[1], colour), "frame \(index): \(c)")
        }
    }
}
