import Foundation
import ImagePipe
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
            // The picture a page shows with no script: a PNG small enough to inline in every record.
            let picture = try #require(placeholder["data_uri"])
            #expect(picture.hasPrefix("data:image/png;base64,") && picture.utf8.count < 300, "\(picture)")
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
            #expect(picture.contains(";background-image:url(data:image/png;base64,"), "\(picture)")
            #expect(picture.contains("loading=\"lazy\"") && !picture.contains("fetchpriority"), "lazy unless --eager")
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

    /// A local folder a web server or CDN serves (quick start 2's upload inbox): with
    /// `--public-base-url`, a batch's manifest, a re-run's, a queue's records and the markup carry
    /// `BASE/KEY` URLs, the key percent-encoded as a bucket's, instead of `file://` ones.
    @Test func aServedLocalFolderRecordsItsPublicURLs() throws {
        CommandRunner.copyFixture("images/formats/landscape.jpg", to: directory, as: "in/photo.jpg")
        CommandRunner.copyFixture("images/formats/tall.jpg", to: directory, as: "in/trip/turned & co.jpg")
        let base = "https://img.example.com/media/"
        let batch = [
            "batch", directory.url("in"), "--dest", directory.url("out"), "--public-base-url", base,
            "--manifest", directory.url("m.jsonl"), "--variant", "small=400x,jpeg,q80", "--variant", "big=800x,webp,q70",
        ]
        func urls() throws -> [String: [String]] {
            let lines = try String(contentsOfFile: directory.url("m.jsonl"), encoding: .utf8).split(separator: "\n")
            var found: [String: [String]] = [:]
            for line in lines {
                let record = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                let variants = try #require(record["variants"] as? [[String: Any]])
                found[record["source"] as? String ?? ""] = variants.compactMap { $0["url"] as? String }
            }
            return found
        }
        let expected = [
            "photo.jpg": ["https://img.example.com/media/photo-small.jpg", "https://img.example.com/media/photo-big.webp"],
            "trip/turned & co.jpg": [
                "https://img.example.com/media/trip/turned%20%26%20co-small.jpg", "https://img.example.com/media/trip/turned%20%26%20co-big.webp",
            ],
        ]
        let first = try CommandRunner.run(batch)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(try urls() == expected)
        #expect(FileManager.default.fileExists(atPath: directory.url("out/trip/turned & co-small.jpg")), "the files are where they were")

        // A re-run finds everything in place and records the same URLs.
        let again = try CommandRunner.run(batch)
        #expect(again.stderr.contains("0 done, 0 failed, 2 skipped"), "\(again.stderr)")
        #expect(try urls() == expected)

        // The markup needs no --base-url, and says nothing of file:// URLs.
        let markup = try CommandRunner.run(["srcset", directory.url("m.jsonl")])
        #expect(markup.status == 0 && markup.stderr.isEmpty, "\(markup.stderr)")
        #expect(markup.stdout.contains("https://img.example.com/media/trip/turned%20%26%20co-small.jpg 150w"), "\(markup.stdout)")
        #expect(!markup.stdout.contains("file://"), "\(markup.stdout)")

        // A queue's worker records them too, in the record its application reads.
        InboxDelivery.deliver(Fixtures.data("images/formats/landscape.jpg"), to: directory.url("queue/inbox"), as: "upload 1.jpg")
        let watch = try CommandRunner.run([
            "watch", directory.url("queue"), "--dest", directory.url("served"), "--public-base-url", "https://img.example.com",
            "--key", "{hash}/{variant}.{ext}", "--variant", "small=400x,jpeg,q80", "--jobs", "1", "--exit-when-empty",
        ])
        #expect(watch.status == 0, "\(watch.stderr)")
        let record = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: directory.url("queue/done/upload 1.jpg.json"))))
                as? [String: Any])
        let hash = SHA256Digest.hash(Fixtures.data("images/formats/landscape.jpg")).hex.prefix(16)
        #expect((record["variants"] as? [[String: Any]])?.first?["url"] as? String == "https://img.example.com/\(hash)/small.jpg", "\(record)")
        #expect((record["placeholder"] as? [String: String])?["data_uri"]?.hasPrefix("data:image/png;base64,") == true, "\(record)")
    }

    @Test func jsonGivesTheSameForATemplateEngine() throws {
        let manifest = try ManifestReader.read(try batch())
        let output = try CommandRunner.run(["srcset", directory.url("m.jsonl"), "--json"])
        #expect(output.status == 0, "\(output.stderr)")
        for line in output.stdout.split(separator: "\n") {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let sources = try #require(object["sources"] as? [[String: Any]])
            #expect(sources.map { $0["format"] as? String } == ["webp", "jpeg"])
            let widths = (sources[1]["candidates"] as? [[String: Any]])?.map { $0["width"] as? Int }
            #expect(widths == [400, 800])
            #expect((object["crops"] as? [[String: Any]])?.first?["variant"] as? String == "sq")
            #expect((object["placeholder"] as? [String: String])?["thumbhash"] != nil)
            // The placeholder's picture, ready for Next.js's blurDataURL, as the manifest records it.
            let recorded = manifest.first { $0.source == object["source"] as? String }?.placeholder?.dataURI
            #expect(recorded != nil && (object["placeholder"] as? [String: String])?["data_uri"] == recorded)
            #expect(object["eager"] == nil)
        }
    }

    /// `--eager N`: the first N pictures load at once and first (the page's largest paint), the rest
    /// lazily; in HTML and in JSON. A negative count is refused, saying so.
    @Test func eagerMarksTheFirstPicturesOnly() throws {
        let manifest = try batch()
        let output = try CommandRunner.run(["srcset", manifest, "--eager", "1"])
        #expect(output.status == 0, "\(output.stderr)")
        let images = output.stdout.split(separator: "\n").filter { $0.contains("<img ") }
        #expect(images.count == 2)
        #expect(images[0].contains("loading=\"eager\" fetchpriority=\"high\"") && !images[0].contains("lazy"), "\(images[0])")
        #expect(images[1].contains("loading=\"lazy\"") && !images[1].contains("eager") && !images[1].contains("fetchpriority"), "\(images[1])")
        // More than there are: every one.
        let all = try CommandRunner.run(["srcset", manifest, "--eager", "5"])
        #expect(all.stdout.components(separatedBy: "fetchpriority=\"high\"").count == 3 && !all.stdout.contains("lazy"))

        let json = try CommandRunner.run(["srcset", manifest, "--eager", "1", "--json"])
        let objects = try json.stdout.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        #expect(objects.map { $0["eager"] as? Bool } == [true, nil], "\(json.stdout)")

        for refused in [["--eager", "-1"], ["--eager=-3"]] {
            let negative = try CommandRunner.run(["srcset", manifest] + refused)
            #expect(negative.status == 2 && negative.stdout.isEmpty, "\(refused)")
            #expect(negative.stderr.contains("imagepipe: error: --eager cannot be negative"), "\(negative.stderr)")
        }
    }

    /// A manifest written before records carried the picture still gives it, made from its ThumbHash:
    /// the same as a new record's. A transparent original's HTML has its colour alone (its picture
    /// would show through it once loaded), while its JSON has the picture for a page that removes it.
    @Test func anEarlierManifestGetsThePictureAndATransparentOriginalItsColourAlone() throws {
        CommandRunner.copyFixture("images/formats/landscape.jpg", to: directory, as: "in/photo.jpg")
        CommandRunner.copyFixture("images/formats/alpha.png", to: directory, as: "in/logo.png")
        let run = try CommandRunner.run([
            "batch", directory.url("in"), "--dest", directory.url("out"), "--manifest", directory.url("m.jsonl"), "--variant", "big=800x,png",
        ])
        #expect(run.status == 0, "\(run.stderr)")
        let lines = try String(contentsOfFile: directory.url("m.jsonl"), encoding: .utf8).split(separator: "\n")
        var pictures: [String: String] = [:]
        var earlier: [String] = []
        for line in lines {
            var record = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            var placeholder = try #require(record["placeholder"] as? [String: String])
            pictures[record["source"] as? String ?? ""] = placeholder.removeValue(forKey: "data_uri")
            record["placeholder"] = placeholder
            earlier.append(String(decoding: try JSONSerialization.data(withJSONObject: record, options: [.sortedKeys]), as: UTF8.self))
        }
        #expect(!earlier.joined().contains("data_uri") && pictures.count == 2)
        directory.write("earlier.jsonl", earlier.joined(separator: "\n") + "\n")

        let html = try CommandRunner.run(["srcset", directory.url("earlier.jsonl"), "--base-url", "/img"])
        #expect(html.status == 0, "\(html.stderr)")
        let byName = Dictionary(uniqueKeysWithValues: html.stdout.components(separatedBy: "<!-- ").dropFirst().map { ($0.prefix { $0 != " " }, $0) })
        let photo = try #require(byName["photo.jpg"]), logo = try #require(byName["logo.png"])
        #expect(photo.contains("background-image:url(\(try #require(pictures["photo.jpg"])))"), "\(photo)")
        #expect(logo.contains("background-color:#") && !logo.contains("background-image"), "\(logo)")

        let json = try CommandRunner.run(["srcset", directory.url("earlier.jsonl"), "--base-url", "/img", "--json"])
        for line in json.stdout.split(separator: "\n") {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let source = object["source"] as? String ?? ""
            #expect((object["placeholder"] as? [String: String])?["data_uri"] == pictures[source], "\(source)")
        }
    }
}
