// The markup `imagepipe srcset` prints, rendered by headless Chromium: which file a browser loads at 1x and 2x.
import Foundation
import ImagePipe
import ImagePipeTestSupport
import Testing

/// A browser that takes WebP must never get a smaller picture than one that takes only the fallback.
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
}
