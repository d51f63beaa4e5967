// The markup `imagepipe srcset` prints, rendered by headless Chromium: which file a browser loads at 1x and 2x, and what it shows before.
import Foundation
import ImagePipe
import ImagePipeTestSupport
import ImagePipeVipsTestSupport
import Testing

/// A browser that takes WebP must never get a smaller picture than one that takes only the fallback,
/// and shows the placeholder's picture until the image arrives.
@Suite(.offThePool) struct SrcsetBrowserTests {
    let directory = TemporaryDirectory(prefix: "imagepipe-srcset-browser")

    /// The `web` preset over an 1800x1200 photo: `large` 1800 px JPEG, `medium` 1024 px WebP.
    func markup() throws -> (html: String, widths: [String: Int]) {
        CommandRunner.copyFixture("images/exif-orientation/Landscape_1.jpg", to: directory, as: "in/photo.jpg")
        let batch = try CommandRunner.run(["batch", directory.url("in"), "--dest", directory.url("out"), "--manifest", directory.url("m.jsonl")])
        #expect(batch.status == 0, "\(batch.stderr)")
        let srcset = try CommandRunner.run(["srcset", directory.url("m.jsonl")])
        #expect(srcset.status == 0, "\(srcset.stderr)")
        let record = try #require(try ManifestReader.read(directory.url("m.jsonl")).first)
        return (srcset.stdout, Dictionary(uniqueKeysWithValues: record.variants.map { ($0.url, $0.width) }))
    }

    /// The URL Chromium loads for the page's `<img>` with a window `width` CSS pixels wide at `scale`.
    func loaded(_ picture: String, width: Int, scale: Int, page: String) throws -> String {
        let html = """
            <!DOCTYPE html><html><head><style>body{margin:0}img{display:block;width:100%;height:auto}</style></head><body>
            \(picture)
            <script>
            const img = document.querySelector('img');
            const report = () => { document.title = 'loaded:' + img.currentSrc; };
            if (img.complete && img.currentSrc) report(); else img.addEventListener('load', report);
            </script></body></html>
            """
        directory.write(page, html)
        let output = try CommandRunner.run(
            executable: "/usr/bin/chromium",
            [
                "--headless", "--disable-gpu", "--no-sandbox", "--user-data-dir=" + directory.url("profile"),
                "--window-size=\(width),900", "--force-device-scale-factor=\(scale)", "--virtual-time-budget=10000",
                "--dump-dom", "file://" + directory.url(page),
            ])
        let title = try #require(output.stdout.range(of: #"<title>loaded:[^<]*"#, options: .regularExpression), "\(output.stdout.prefix(500))")
        return String(output.stdout[title].dropFirst("<title>loaded:".count))
    }

    @Test(.requires(.chromium))
    func aWebPBrowserGetsAsManyPixelsAsAJPEGOnlyOneAt1xAnd2x() throws {
        let (html, widths) = try markup()
        // What a browser without WebP sees: the same picture with no <source>.
        let fallbackOnly = html.split(separator: "\n").filter { !$0.contains("<source") }.joined(separator: "\n")
        for (width, scale) in [(800, 1), (800, 2), (1400, 2)] {
            let modern = try loaded(html, width: width, scale: scale, page: "modern.html")
            let fallback = try loaded(fallbackOnly, width: width, scale: scale, page: "fallback.html")
            let got = try #require(widths[modern], "\(modern)"), fallbackGot = try #require(widths[fallback], "\(fallback)")
            #expect(got >= min(width * scale, fallbackGot), "\(width) px at \(scale)x: WebP browser got \(modern), JPEG-only \(fallback)")
        }
        // At 1x in 800 px the WebP is enough and is what loads; at 2x it takes the 1800 px file.
        #expect(try loaded(html, width: 800, scale: 1, page: "modern.html").hasSuffix("photo-medium.webp"))
        #expect(try loaded(html, width: 800, scale: 2, page: "modern.html").hasSuffix("photo-large.jpg"))
    }

    /// Before a picture arrives the page shows its placeholder's picture, with no script: Chromium
    /// paints the `<img>`'s background, the ThumbHash's few pixels stretched over the box. Here the
    /// variants' URLs lead nowhere, so the box shows what it shows until an image loads. At the
    /// centre of each of the tiny PNG's pixels the screenshot has that pixel's colour (within a
    /// level, measured), and those differ across the box: a picture, not the flat colour of old.
    @Test(.requires(.chromium))
    func thePlaceholdersPictureShowsBeforeTheImageLoads() throws {
        CommandRunner.copyFixture("images/formats/landscape.jpg", to: directory, as: "in/photo.jpg")
        let batch = try CommandRunner.run(["batch", directory.url("in"), "--dest", directory.url("out"), "--manifest", directory.url("m.jsonl")])
        #expect(batch.status == 0, "\(batch.stderr)")
        let srcset = try CommandRunner.run(["srcset", directory.url("m.jsonl"), "--base-url", "/nowhere"])
        #expect(srcset.status == 0 && srcset.stdout.contains("background-image:url(data:image/png;base64,"), "\(srcset.stdout)")
        let uri = try #require(try ManifestReader.read(directory.url("m.jsonl")).first?.placeholder?.dataURI)
        let png = try #require(Data(base64Encoded: String(uri.dropFirst("data:image/png;base64,".count))))
        let tiny = try VipsProbe.decode(png), grid = tiny.size

        // The 900x600 photo in a box 700 px wide: 700x467.
        directory.write(
            "waiting.html",
            "<!DOCTYPE html><html><head><style>body{margin:0;background:#fff}img{display:block;width:700px;height:auto}</style></head>"
                + "<body>\(srcset.stdout)</body></html>")
        _ = try CommandRunner.run(
            executable: "/usr/bin/chromium",
            [
                "--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars", "--user-data-dir=" + directory.url("profile"),
                "--window-size=700,500", "--force-device-scale-factor=1", "--screenshot=" + directory.url("shot.png"),
                "file://" + directory.url("waiting.html"),
            ])
        let shot = try VipsProbe.decode(try Data(contentsOf: URL(fileURLWithPath: directory.url("shot.png"))))
        var differences: [Double] = [], lightness: [Double] = []
        for row in 0..<grid.height {
            for column in 0..<grid.width {
                let x = Int((Double(column) + 0.5) * 700 / Double(grid.width)), y = Int((Double(row) + 0.5) * 467 / Double(grid.height))
                let painted = shot.pixel(x: x, y: y).prefix(3), expected = tiny.pixel(x: column, y: row).prefix(3)
                differences += zip(painted, expected).map { abs($0 - $1) }
                lightness.append(painted.reduce(0, +) / 3)
            }
        }
        let mean = differences.reduce(0, +) / Double(differences.count)
        #expect(mean < 8, "the box shows the placeholder's picture: \(mean) levels from its pixels on average")
        #expect((lightness.max() ?? 0) - (lightness.min() ?? 0) > 40, "a picture, not one colour: \(lightness)")
    }
}
