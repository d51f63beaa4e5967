import Foundation
import ImagePipe
import ImagePipeTestSupport
import ImagePipeVipsTestSupport
import Testing

/// `imagepipe report` on a real run's manifest, rendered by a real browser.
@Suite(.offThePool) struct ReportCommandTests {
    let directory = TemporaryDirectory(prefix: "imagepipe-report")

    func makeRun() throws {
        for name in ["landscape.jpg", "alpha.png", "tall.jpg"] {
            CommandRunner.copyFixture("images/formats/" + name, to: directory, as: "src/" + name)
        }
        CommandRunner.copyFixture("hostile/truncated.jpg", to: directory, as: "src/broken.jpg")
        let batch = try CommandRunner.run([
            "batch", directory.url("src"), "--dest", directory.url("out"),
            "--manifest", directory.url("m.jsonl"), "--variant", "large=1024x1024,jpeg,auto",
            "--variant", "thumb=320x320,webp,q70,cover",
        ])
        #expect(batch.status == 1, "one source is broken")
    }

    @Test func thePageIsSelfContainedAndShowsTotalsVariantsImagesAndFailures() throws {
        try makeRun()
        let output = try CommandRunner.run(["report", directory.url("m.jsonl"), "-o", directory.url("report.html")])
        #expect(output.status == 0, "\(output.stderr)")
        let html = try String(contentsOfFile: directory.url("report.html"), encoding: .utf8)
        #expect(html.contains("<div><b>3</b> done</div><div><b>1</b> failed</div>"))
        #expect(html.contains("<td>large</td><td>3</td>") && html.contains("<td>webp</td><td>3</td>"))
        #expect(html.contains("<td>broken.jpg</td><td>corrupt_image</td>"))
        #expect(html.contains("<svg role=\"img\""))
        #expect(html.components(separatedBy: "src=\"data:image/webp;base64,").count == 4, "every thumbnail embedded")
        for outside in ["http://", "https://", "src=\"/", "href=", "<script", "@import", "url("] {
            #expect(!html.contains(outside), "nothing loaded from elsewhere: \(outside)")
        }
        // Chosen qualities and scores show when auto chose them.
        let manifest = try ManifestReader.read(directory.url("m.jsonl"))
        let large = try #require(manifest.first { $0.source == "landscape.jpg" }?.variants.first { $0.name == "large" })
        let quality = try #require(large.encoding.quality)
        #expect(html.contains("large: \(large.width)x\(large.height) jpeg, \(BatchSummary.formatBytes(large.bytes)), q\(quality), score"))
    }

    /// A name longer than its place is clipped with an ellipsis, and shown whole on hover: the
    /// card's source name by CSS, a chart label (SVG text neither wraps nor clips) in its text.
    @Test func namesItClipsEndInAnEllipsisAndShowWholeOnHover() throws {
        let long = "IMG_20240512_183045_HDR_edited_by_someone_with_a_long_name.jpg"
        CommandRunner.copyFixture("images/formats/tiny.png", to: directory, as: "src/" + long)
        let variant = "thumbnail_for_the_gallery_page"
        let batch = try CommandRunner.run([
            "batch", directory.url("src"), "--dest", directory.url("out"), "--manifest", directory.url("m.jsonl"),
            "--variant", "\(variant)=64x64,webp,q70",
        ])
        #expect(batch.status == 0, "\(batch.stderr)")
        #expect(try CommandRunner.run(["report", directory.url("m.jsonl"), "-o", directory.url("report.html")]).status == 0)
        let html = try String(contentsOfFile: directory.url("report.html"), encoding: .utf8)
        #expect(html.contains("<b class=\"name\" title=\"\(long)\">\(long)</b>"), "the card's name, whole in its title")
        #expect(html.contains(".name{display:block;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}"))
        #expect(html.contains("<title>\(variant)</title>\(variant.prefix(15))…</text>"), "the chart's label, clipped with an ellipsis")
        #expect(html.contains(">originals</text>"), "a short label stays whole")
    }

    @Test(.requires(.chromium))
    func chromiumRendersThePageWithItsTotals() throws {
        try makeRun()
        #expect(try CommandRunner.run(["report", directory.url("m.jsonl"), "-o", directory.url("report.html")]).status == 0)
        let page = "file://" + directory.url("report.html")
        let flags = ["--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--user-data-dir=" + directory.url("profile")]

        // The DOM as the browser built it: the page parsed, laid out and kept its content.
        let dom = try Self.run("/usr/bin/chromium", flags + ["--dump-dom", page])
        #expect(dom.contains("<b>3</b> done") && dom.contains("<b>1</b> failed"), "\(dom.prefix(400))")
        #expect(dom.contains("broken.jpg"))
        // Each card's palette, as swatches the browser kept (colours from the facts, no address).
        #expect(dom.components(separatedBy: "<span class=\"palette\"").count == 4, "a palette per image shown")

        // A screenshot: a real picture of the page, not a blank one.
        _ = try Self.run("/usr/bin/chromium", flags + ["--window-size=1000,1200", "--screenshot=" + directory.url("shot.png"), page])
        let shot = try Data(contentsOf: URL(fileURLWithPath: directory.url("shot.png")))
        let info = try VipsProbe.info(shot)
        #expect(info.width == 1000 && info.height == 1200)
        let image = try VipsProbe.decode(shot)
        #expect(image.pixel(x: 2, y: 2).prefix(3).allSatisfy { $0 > 240 }, "a white page")
        // The dark heading in the top left corner, where the page starts.
        let heading = (10..<70).flatMap { y in stride(from: 20, to: 200, by: 3).map { image.pixel(x: $0, y: y) } }
        #expect(heading.contains { $0.prefix(3).allSatisfy { $0 < 90 } }, "the heading is drawn")
    }

    /// Runs a program and returns its standard output; stderr (Chromium's D-Bus chatter) is dropped.
    static func run(_ executable: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }
}
