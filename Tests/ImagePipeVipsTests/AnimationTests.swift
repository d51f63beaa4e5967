// Animated GIF and WebP sources through libvips, checked with Pillow: frames, delays, loop count, size and each frame's colour.
import Foundation
import ImagePipe
import ImagePipeTestSupport
import ImagePipeVips
import Testing

@Suite struct AnimationTests {
    let directory = TemporaryDirectory(prefix: "imagepipe-animation")

    /// The colours of the frames the tests make, one per frame, far apart in every channel pair.
    static let colours = [(230, 30, 30), (30, 200, 40), (40, 50, 220), (240, 220, 20)]
    /// Their delays in ms: distinct, over libwebp's 10 ms floor and whole centiseconds for GIF.
    static let delays = [80, 120, 200, 50]

    /// Writes an animation with Pillow: one solid colour per frame, each with its delay, played
    /// `plays` times (WebP's loop count; a GIF's Netscape repeat count is one less), at `width`x`height`.
    func writeAnimation(_ name: String, width: Int = 120, height: Int = 80, plays: Int = 4) throws -> Data {
        let path = directory.url(name)
        _ = try PythonOracle.run(
            """
            import sys, json
            from PIL import Image
            path, w, h, plays = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
            colours, delays = json.loads(sys.argv[5]), json.loads(sys.argv[6])
            frames = [Image.new('RGB', (w, h), tuple(c)) for c in colours]
            if path.endswith('.gif'):
                extra = {} if plays == 1 else {'loop': 0 if plays == 0 else plays - 1}
            else:
                extra = {'loop': plays, 'lossless': True}
            frames[0].save(path, save_all=True, append_images=frames[1:], duration=delays, **extra)
            """,
            [
                path, String(width), String(height), String(plays),
                "[" + Self.colours.map { "[\($0.0),\($0.1),\($0.2)]" }.joined(separator: ",") + "]",
                "[" + Self.delays.map(String.init).joined(separator: ",") + "]",
            ])
        return try Data(contentsOf: URL(fileURLWithPath: path))
    }

    /// What Pillow reads in an encoded image: its size, frames, each frame's delay and centre
    /// colour, and how many times it plays (0: forever; a GIF without a Netscape loop plays once,
    /// one with a repeat count N plays N + 1 times; a WebP's loop count is its plays).
    struct Read: Decodable {
        var width: Int, height: Int, frames: Int, plays: Int
        var delays: [Int]
        var colours: [[Int]]
    }

    func read(_ data: Data) throws -> Read {
        let path = directory.url("read-\(UUID().uuidString)")
        try data.write(to: URL(fileURLWithPath: path))
        let text = try PythonOracle.run(
            """
            import sys, json
            from PIL import Image
            im = Image.open(sys.argv[1])
            n = getattr(im, 'n_frames', 1)
            delays, colours = [], []
            for k in range(n):
                im.seek(k)
                im.load()
                delays.append(im.info.get('duration', 0) or 0)
                colours.append(list(im.convert('RGB').getpixel((im.size[0] // 2, im.size[1] // 2))))
            loop = im.info.get('loop')
            if im.format == 'GIF':
                plays = 1 if loop is None else (0 if loop == 0 else loop + 1)
            else:
                plays = loop or 0
            print(json.dumps({'width': im.size[0], 'height': im.size[1], 'frames': n, 'plays': plays,
                              'delays': delays, 'colours': colours}))
            """, [path])
        return try JSONDecoder().decode(Read.self, from: Data(text.utf8))
    }

    /// Whether `colour` is frame `index`'s colour, within lossy encoding's and GIF quantising's error.
    static func matches(_ colour: [Int], frame index: Int, tolerance: Int = 16) -> Bool {
        let expected = colours[index]
        return abs(colour[0] - expected.0) <= tolerance && abs(colour[1] - expected.1) <= tolerance
            && abs(colour[2] - expected.2) <= tolerance
    }

    static let variants = [
        "medium=60x60,webp,q80", "thumb=30x30,webp,q80,cover", "moving=60x,gif", "photo=60x60,jpeg,q85",
        "first=60x60,webp,q80,still", "lossless=60x60,webp,lossless",
    ].map(Fixtures.variant)

    @Test(arguments: ["frames.gif", "frames.webp"])
    func everyFrameIsKeptWithItsDelayAndTheLoopCount(name: String) throws {
        let source = try writeAnimation(name, plays: 4)
        let original = try read(source)
        #expect(original.frames == 4 && original.delays == Self.delays && original.plays == 4, "Pillow wrote \(original)")

        let compressed = try Fixtures.compress(bytes: source, Self.variants)
        for name in ["medium", "moving", "lossless", "thumb"] {
            let output = compressed.output(name)
            let decoded = try read(output.data)
            #expect(output.encoding.frames == 4, "\(name)")
            #expect(decoded.frames == 4 && decoded.delays == Self.delays && decoded.plays == 4, "\(name): \(decoded)")
            let size = name == "thumb" ? PixelSize(width: 30, height: 30) : PixelSize(width: 60, height: 40)
            #expect(PixelSize(width: decoded.width, height: decoded.height) == size && output.encoding.size == size, "\(name): \(decoded)")
            for (index, colour) in decoded.colours.enumerated() {
                #expect(Self.matches(colour, frame: index), "\(name) frame \(index): \(colour)")
            }
        }
        // `still` and a JPEG take the first frame.
        for name in ["first", "photo"] {
            let decoded = try read(compressed.output(name).data)
            #expect(decoded.frames == 1 && compressed.output(name).encoding.frames == 1, "\(name): \(decoded)")
            #expect(Self.matches(decoded.colours[0], frame: 0), "\(name): \(decoded)")
        }
    }

    /// A loop count other than forever and a single play survive both ways.
    @Test(arguments: [("once.gif", 1), ("three.webp", 3), ("forever.gif", 0)])
    func loopCountIsKept(name: String, plays: Int) throws {
        let source = try writeAnimation(name, plays: plays)
        #expect(try read(source).plays == plays)
        let compressed = try Fixtures.compress(bytes: source, [Fixtures.variant("w=60x60,webp,q80"), Fixtures.variant("g=60x60,gif")])
        for name in ["w", "g"] {
            let decoded = try read(compressed.output(name).data)
            #expect(decoded.frames == 4 && decoded.plays == plays, "\(name): \(decoded)")
        }
    }

    /// The fixtures: their frame counts as Pillow reads them, kept by the `web` preset's WebP
    /// variants (the GIF's zero delays become libwebp's browser-like 100 ms), the JPEG still.
    @Test(arguments: ["images/formats/animated.gif", "images/formats/animated-webp.webp"])
    func fixturesKeepTheirFrames(relative: String) throws {
        let original = try read(Fixtures.data(relative))
        #expect(original.frames == 3)
        let compressed = try Fixtures.compress(relative)
        for name in ["medium", "thumb"] {
            let decoded = try read(compressed.output(name).data)
            #expect(decoded.frames == original.frames, "\(name): \(decoded)")
            #expect(decoded.delays == original.delays.map { $0 <= 10 ? 100 : $0 }, "\(name): \(decoded) from \(original)")
            #expect(decoded.plays == original.plays)
        }
        // A 320x320 cover box on a 200x150 original is scaled down to fit it: 150x150.
        let thumb = try read(compressed.output("thumb").data)
        #expect(thumb.width == 150 && thumb.height == 150, "\(thumb)")
        #expect(try read(compressed.output("large").data).frames == 1)
        #expect(FrameCount.of(Fixtures.data(relative)) == original.frames)
    }

    /// ``FrameCount`` reads the frames Pillow reads, from the container alone.
    @Test func frameCountFromTheContainerIsPillows() throws {
        for name in ["count.gif", "count.webp"] {
            #expect(FrameCount.of(try writeAnimation(name)) == 4, "\(name)")
        }
        #expect(FrameCount.of(Fixtures.data("images/formats/landscape-webp.webp")) == 1)
        #expect(FrameCount.of(Fixtures.data("images/formats/landscape.jpg")) == 1)
    }

    /// An animated WebP whose EXIF orientation turns it (6: a quarter turn clockwise) has every frame
    /// turned: 80x80 frames, their left half each its colour and their right half grey, show the
    /// colour on top. At the frames' own size nothing is resized, and a frame not turned by imagepipe
    /// itself would keep its colour on the left (a resize would turn it on its own).
    @Test func everyFrameIsTurnedUpright() throws {
        let path = directory.url("turned.webp")
        _ = try PythonOracle.run(
            """
            import sys, json
            from PIL import Image
            frames = []
            for colour in json.loads(sys.argv[2]):
                frame = Image.new('RGB', (80, 80), (128, 128, 128))
                frame.paste(tuple(colour), (0, 0, 40, 80))
                frames.append(frame)
            exif = Image.Exif()
            exif[0x0112] = 6
            frames[0].save(sys.argv[1], save_all=True, append_images=frames[1:], duration=100, loop=0,
                           lossless=True, exif=exif.tobytes())
            """, [path, "[" + Self.colours.map { "[\($0.0),\($0.1),\($0.2)]" }.joined(separator: ",") + "]"])
        let source = try Data(contentsOf: URL(fileURLWithPath: path))
        let compressed = try Fixtures.compress(bytes: source, [Fixtures.variant("s=80x80,webp,lossless")])
        #expect(compressed.sourceSize == PixelSize(width: 80, height: 80))
        let text = try PythonOracle.run(
            """
            import sys, json
            from PIL import Image
            im = Image.open(sys.argv[1])
            frames = []
            for k in range(im.n_frames):
                im.seek(k)
                rgb = im.convert('RGB')
                frames.append([list(rgb.getpixel((70, 10))), list(rgb.getpixel((10, 70)))])
            print(json.dumps({'size': list(im.size), 'frames': frames}))
            """, [try write(compressed.variants[0].data)])
        struct Turned: Decodable { var size: [Int], frames: [[[Int]]] }
        let turned = try JSONDecoder().decode(Turned.self, from: Data(text.utf8))
        #expect(turned.size == [80, 80] && turned.frames.count == 4, "\(turned)")
        for (index, pixels) in turned.frames.enumerated() {
            #expect(Self.matches(pixels[0], frame: index, tolerance: 4), "frame \(index) top: \(pixels)")
            #expect(pixels[1].allSatisfy { abs($0 - 128) <= 4 }, "frame \(index) bottom: \(pixels)")
        }
    }

    /// Writes bytes to a new file in the test's directory and returns its path.
    func write(_ data: Data) throws -> String {
        let path = directory.url("out-\(UUID().uuidString)")
        try data.write(to: URL(fileURLWithPath: path))
        return path
    }
}
