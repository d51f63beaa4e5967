import Foundation
import ImagePipeTestSupport
import Testing

/// `imagepipe srcset` over a real batch's manifest.
@Suite(.offThePool) struct SrcsetCommandTests {
    let directory = TemporaryDirectory(prefix: "imagepipe-srcset")

    func batch() throws -> String {
        CommandRunner.copyFixture("images/formats/landscape.jpg", to: directory, as: "in/photo.jpg")
        CommandRunner.copyFixture("images/exif-orientation/Landscape_6.jpg", to: directory, as: "in/turned & co.jpg")
        let output = try CommandRunner.run([
            "batch", directory.url("in"), "--dest", directory.url("out"), "--manifest", directory.url("m.jsonl"),
            "--variant", "small=400x,jpeg,q80", "--variant", "big=800x,jpeg,q80",
            "--variant", "big-webp=800x,webp,auto", "--variant", "sq=100x100,webp,q70,cover",
        ])
        #expect(output.status == 0, "\(output.stderr)")
        return directory.url("m.jsonl")
    }

    @Test func theManifestCarriesAPlaceholderAndChosenQualities() throws {
        let lines = try String(contentsOfFile: try batch(), encoding: .utf8).split(separator: "\n")
        for line in lines {
            let record = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let placeholder = try #require(record["placeholder"] as? [String: String])
            #expect(placeholder["color"]?.range(of: "^#[0-9a-f]{6}$", options: .regularExpression) != nil)
            #expect(Data(base64Encoded: placeholder["thumbhash"] ?? "")?.count ?? 0 >= 5)
            let variants = try #require(record["variants"] as? [[String: Any]])
            let auto = try #require(variants.first { $0["name"] as? String == "big-webp" })
            #expect((auto["score"] as? Double ?? 0) >= 70 && auto["quality"] as? Int != nil && (auto["encodes"] as? Int ?? 0) >= 1)
            #expect(variants.first { $0["name"] as? String == "small" }?["quality"] as? Int == 80)
        }
    }

    @Test func printsAPictureWithASourcePerModernFormatAndTheFallbackImg() throws {
        let output = try CommandRunner.run(["srcset", try batch(), "--sizes", "(max-width: 800px) 100vw, 800px"])
        #expect(output.status == 0, "\(output.stderr)")
        let pictures = output.stdout.components(separatedBy: "<picture>").dropFirst()
        #expect(pictures.count == 2)
        for picture in pictures {
            #expect(picture.contains("<source type=\"image/webp\" srcset=\""))
            #expect(picture.contains("-big-webp.webp 800w\""))
            #expect(
                picture.range(
                    of: #"<img src="[^"]*-big\.jpg" srcset="[^"]*-small\.jpg 400w, [^"]*-big\.jpg 800w""#,
                    options: .regularExpression) != nil, "\(picture)")
            #expect(picture.contains("sizes=\"(max-width: 800px) 100vw, 800px\""))
            #expect(picture.contains("data-thumbhash=\"") && picture.contains("background-color:#"))
            #expect(!picture.contains("-sq."), "the square crop is left out of the srcsets")
        }
        #expect(output.stdout.contains("turned &amp; co"), "names are escaped")
    }

    @Test func offersJPEGXLFirstThenAVIFAndWebPBeforeTheFallback() throws {
        CommandRunner.copyFixture("images/formats/landscape.jpg", to: directory, as: "in/photo.jpg")
        let batch = try CommandRunner.run([
            "batch", directory.url("in"), "--dest", directory.url("out"), "--manifest", directory.url("m.jsonl"),
            "--variant", "j=600x,jpeg,q80", "--variant", "w=600x,webp,q70", "--variant", "a=600x,avif,q50", "--variant", "x=600x,jxl,q75",
        ])
        #expect(batch.status == 0, "\(batch.stderr)")
        let output = try CommandRunner.run(["srcset", directory.url("m.jsonl"), "--base-url", "https://cdn.example"])
        #expect(output.status == 0, "\(output.stderr)")
        let types = output.stdout.split(separator: "\n").compactMap { line -> String? in
            guard let range = line.range(of: #"<source type="[^"]+""#, options: .regularExpression) else { return nil }
            return String(line[range].dropFirst("<source type=\"".count).dropLast())
        }
        #expect(types == ["image/jxl", "image/avif", "image/webp"], "\(output.stdout)")
        #expect(output.stdout.contains("<img src=\"https://cdn.example/photo-j.jpg\""), "\(output.stdout)")
    }

    /// A local destination records file:// URLs, which no visitor can load: `--base-url` says where
    /// the folder is served, and without it the command says so instead of printing them silently.
    @Test func baseURLReplacesTheLocalFileURLsAndTheirAbsenceIsSaid() throws {
        let manifest = try batch()
        let local = try CommandRunner.run(["srcset", manifest])
        #expect(local.status == 0, "\(local.stderr)")
        #expect(local.stdout.contains("srcset=\"file://"), "\(local.stdout)")
        #expect(local.stderr.contains("their URLs are file:// URLs") && local.stderr.contains("--base-url"), "\(local.stderr)")

        let served = try CommandRunner.run(["srcset", manifest, "--base-url", "https://cdn.example.com/img/"])
        #expect(served.status == 0 && served.stderr.isEmpty, "\(served.stderr)")
        #expect(served.stdout.contains("https://cdn.example.com/img/photo-big.jpg 800w"), "\(served.stdout)")
        #expect(served.stdout.contains("https://cdn.example.com/img/turned%20%26%20co-small.jpg 400w"), "\(served.stdout)")
        #expect(!served.stdout.contains("file://"), "\(served.stdout)")
        let rooted = try CommandRunner.run(["srcset", manifest, "--base-url", "/images", "--json"])
        #expect(
            rooted.status == 0 && rooted.stdout.contains("\"url\":\"\\/images\\/photo-big.jpg\"")
                || rooted.stdout.contains("\"url\":\"/images/photo-big.jpg\""), "\(rooted.stdout)")
    }

    @Test func jsonGivesTheSameForATemplateEngine() throws {
        let output = try CommandRunner.run(["srcset", try batch(), "--json"])
        #expect(output.status == 0, "\(output.stderr)")
        for line in output.stdout.split(separator: "\n") {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let sources = try #require(object["sources"] as? [[String: Any]])
            #expect(sources.map { $0["format"] as? String } == ["webp", "jpeg"])
            let widths = (sources[1]["candidates"] as? [[String: Any]])?.map { $0["width"] as? Int }
            #expect(widths == [400, 800])
            #expect((object["crops"] as? [[String: Any]])?.first?["variant"] as? String == "sq")
            #expect((object["placeholder"] as? [String: String])?["thumbhash"] != nil)
        }
    }
}
