// Metadata policies through the real binary, read back by exiftool: what each keeps in JPEG, WebP, AVIF and PNG, and what none but keep lets out.
import Foundation
import ImagePipe
import ImagePipeTestSupport
import Testing

@Suite(.offThePool, .requires(.exiftool)) struct MetadataCommandTests {
    let directory = TemporaryDirectory(prefix: "imagepipe-metadata")

    /// What `fixtures/make-metadata-photo.sh` wrote into the camera photo and the policies decide
    /// about: found as bytes in a file, whatever tag or block they travel in.
    static let gpsLatitudeText = "48.8584"
    static let privateBytes = ["123456789012", "0000c1234", "99887766", "555444"]

    /// Every tag exiftool finds in `files`, by file name, as `GROUP:TAG` (family 1 groups, numeric values).
    func tags(of files: [String]) throws -> [String: [String: Any]] {
        let path = try RequiredTool.exiftool.located()
        let run = try CommandRunner.run(executable: path, ["-j", "-a", "-G1", "-n", "-b", "-u"] + files)
        let list = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [[String: Any]], "\(run.stderr)")
        var byName: [String: [String: Any]] = [:]
        for object in list {
            let source = try #require(object["SourceFile"] as? String)
            byName[(source as NSString).lastPathComponent] = object
        }
        return byName
    }

    /// The groups a file may have and still carry no metadata of the source's: the container's own
    /// (JFIF, RIFF, QuickTime and HEIF's `meta` box, PNG's header and resolution), exiftool's and
    /// the file system's.
    static let containerGroups: Set<String> = ["ExifTool", "System", "File", "JFIF", "RIFF", "QuickTime", "Meta", "PNG", "PNG-pHYs", "Composite"]

    func batch(_ arguments: [String], into destination: String) throws -> [JobResult] {
        let run = try CommandRunner.run(
            ["batch", directory.url("src"), "--dest", directory.url(destination), "--manifest", directory.url(destination + ".jsonl")]
                + arguments)
        #expect(run.status == 0, "\(run.stderr)")
        return try ManifestReader.read(directory.url(destination + ".jsonl"))
    }

    /// Each policy into each format, one batch run, read back by exiftool: GPS and serial numbers
    /// (EXIF's, the maker note's, XMP's) never out but under `keep`; Artist and Copyright under
    /// copyright, safe and keep; capture date, camera and lens under safe and keep; orientation 1 (or
    /// none) after the photo was turned upright; no thumbnail under any; and `strip` no metadata at all.
    @Test func eachPolicyKeepsWhatItSaysInEveryFormat() throws {
        CommandRunner.copyFixture("metadata/camera.jpg", to: directory, as: "src/camera.jpg")
        let formats: [(name: String, quality: String)] = [("jpeg", ",q80"), ("webp", ",q75"), ("avif", ",q50"), ("png", "")]
        let variants = MetadataPolicy.allCases.flatMap { policy in
            formats.flatMap { format in
                ["--variant", "\(policy.rawValue)-\(format.name)=300x300,\(format.name)\(format.quality),metadata=\(policy.rawValue)"]
            }
        }
        let results = try batch(variants, into: "out")
        #expect(results.count == 1 && results.first?.status == .done, "\(results)")
        let files = directory.files(under: "out").map { directory.url("out/" + $0) }
        #expect(files.count == 16, "\(files)")
        let all = try tags(of: files)

        for policy in MetadataPolicy.allCases {
            for format in formats {
                let variant = "\(policy.rawValue)-\(format.name)"
                let name = try #require(all.keys.first { $0.contains("-\(variant).") }, "no output of \(variant) among \(all.keys.sorted())")
                let found = try #require(all[name])
                let bytes = try Data(contentsOf: URL(fileURLWithPath: files.first { $0.hasSuffix("/" + name) }!))
                let text = String(decoding: bytes, as: UTF8.self)
                let value = { (key: String) in found[key].map { "\($0)" } }
                let keys = found.keys.filter { $0 != "SourceFile" }
                let context = "\(variant): \(keys.sorted())"

                // The photo is stored turned (Orientation 6): upright, it is landscape.
                #expect(value("Composite:ImageSize") == "300 200" || value("Composite:ImageSize") == "300x200", "\(context)")
                #expect(value("IFD0:Orientation") == nil || value("IFD0:Orientation") == "1", "\(context)")
                #expect(value("ExifIFD:ColorSpace") == nil || value("ExifIFD:ColorSpace") == "1", "sRGB pixels: \(context)")
                #expect(!keys.contains { $0.hasPrefix("IFD1:") }, "a thumbnail in \(context)")
                #expect(!keys.contains { $0.hasPrefix("XMP-xmpMM:") } || policy == .keep, "editing history in \(context)")

                let private_ =
                    keys.contains { $0.hasPrefix("GPS:") || $0.contains("GPS") || $0.contains("SerialNumber") || $0.hasPrefix("MakerNotes") }
                    || Self.privateBytes.contains { text.contains($0) }
                if policy == .keep {
                    #expect(value("GPS:GPSLatitude").map { $0.hasPrefix(Self.gpsLatitudeText) } == true, "\(context)")
                    #expect(value("ExifIFD:SerialNumber") == "123456789012", "\(context)")
                } else {
                    #expect(!private_, "location or a serial number in \(context)")
                }

                let artist = value("IFD0:Artist"), copyright = value("IFD0:Copyright")
                if policy == .strip {
                    #expect(keys.allSatisfy { Self.containerGroups.contains(String($0.prefix { $0 != ":" })) }, "metadata in \(context)")
                    #expect(artist == nil && copyright == nil, "\(context)")
                } else {
                    #expect(artist == "Ada Photographer" && copyright == "(c) 2024 Ada Photographer", "\(context)")
                }

                let camera = [value("IFD0:Make"), value("IFD0:Model"), value("ExifIFD:DateTimeOriginal"), value("ExifIFD:LensModel")]
                if policy == .safe || policy == .keep {
                    #expect(
                        camera == ["Canon", "Canon EOS 5D Mark IV", "2024:05:06 07:08:09", "EF24-70mm f/2.8L II USM"], "\(context)")
                    #expect(value("ExifIFD:OffsetTimeOriginal") == "+02:00", "\(context)")
                } else {
                    #expect(camera.allSatisfy { $0 == nil }, "camera or date in \(context)")
                }
            }
        }
    }

    /// `--metadata` sets every variant's policy (from the command line, `IMAGEPIPE_METADATA` or the
    /// configuration file) unless its spec names its own; changing a variant's policy makes its
    /// outputs again, and outputs made with `strip`, the default, stay up to date whichever way it is said.
    @Test func theCommandsPolicyAndReRuns() throws {
        CommandRunner.copyFixture("metadata/camera.jpg", to: directory, as: "src/camera.jpg")
        let variants = ["--variant", "a=200x200,jpeg,q70", "--variant", "b=200x200,webp,q70,metadata=strip"]
        func status(_ arguments: [String]) throws -> JobResult.Status? { try batch(variants + arguments, into: "out").first?.status }

        #expect(try status([]) == .done)
        #expect(try status(["--metadata", "strip"]) == .skipped, "strip, said or not, is what the outputs have")
        #expect(try status(["--metadata", "copyright"]) == .done, "variant a's policy changed")
        let a = try tags(of: [directory.url("out/camera-a.jpg")])["camera-a.jpg"] ?? [:]
        let b = try tags(of: [directory.url("out/camera-b.webp")])["camera-b.webp"] ?? [:]
        #expect(a["IFD0:Artist"] as? String == "Ada Photographer", "\(a.keys.sorted())")
        #expect(b["IFD0:Artist"] == nil, "b names its own policy: \(b.keys.sorted())")
        #expect(try status(["--metadata", "copyright"]) == .skipped)

        directory.write("imagepipe.toml", "metadata = \"safe\"\n")
        #expect(try status(["--config", directory.url("imagepipe.toml")]) == .done, "safe from the file")
        let fromFile = try tags(of: [directory.url("out/camera-a.jpg")])["camera-a.jpg"] ?? [:]
        #expect(fromFile["IFD0:Make"] as? String == "Canon", "\(fromFile.keys.sorted())")

        let environment = ["IMAGEPIPE_METADATA": "copyright"]
        let run = try CommandRunner.run(
            ["batch", directory.url("src"), "--dest", directory.url("out")] + variants, environment: environment)
        #expect(run.status == 0, "\(run.stderr)")
        let fromEnvironment = try tags(of: [directory.url("out/camera-a.jpg")])["camera-a.jpg"] ?? [:]
        #expect(fromEnvironment["IFD0:Make"] == nil && fromEnvironment["IFD0:Artist"] as? String == "Ada Photographer")

        let bad = try CommandRunner.run(["batch", directory.url("src"), "--dest", directory.url("x"), "--metadata", "gps"])
        #expect(bad.status == 2 && bad.stderr.contains("unknown metadata policy 'gps'"), "\(bad.stderr)")
    }

    /// The default `web` preset writes no metadata (the direct JPEG path and the kept original
    /// included), and a policy other than strip never takes either shortcut, which would carry
    /// none or all of the original's.
    @Test func stripWritesNothingAndOtherPoliciesSkipTheShortcuts() throws {
        // Upright (Orientation 1), so its own bytes may stand for a variant at its size.
        let exiftool = try RequiredTool.exiftool.located()
        try FileManager.default.createDirectory(atPath: directory.url("src"), withIntermediateDirectories: true)
        let upright = try CommandRunner.run(
            executable: exiftool, ["-q", "-n", "-Orientation=1", "-o", directory.url("src/camera.jpg"), Fixtures.path("metadata/camera.jpg")])
        #expect(upright.status == 0, "\(upright.stderr)")
        #expect(try batch([], into: "web").first?.status == .done)
        let web = directory.files(under: "web").map { directory.url("web/" + $0) }
        #expect(web.count == 3)
        for (name, found) in try tags(of: web) {
            let keys = found.keys.filter { $0 != "SourceFile" }
            #expect(keys.allSatisfy { Self.containerGroups.contains(String($0.prefix { $0 != ":" })) }, "\(name): \(keys.sorted())")
        }
        // At the original's own size: a stripped variant may be the original's bytes; one with a policy is encoded.
        let own = ["--variant", "o=900x900,jpeg,q95"]  // 600x900 stored and shown
        let stripped = try batch(own, into: "own-strip")
        let kept = try batch(own + ["--metadata", "copyright"], into: "own-copyright")
        #expect(stripped.first?.variants.first?.encoding.keptOriginal == true, "\(stripped)")
        #expect(kept.first?.variants.first?.encoding.keptOriginal != true, "\(kept)")
        let found = try tags(of: [directory.url("own-copyright/camera-o.jpg")])["camera-o.jpg"] ?? [:]
        #expect(found["IFD0:Artist"] as? String == "Ada Photographer" && found["GPS:GPSLatitude"] == nil, "\(found.keys.sorted())")
    }

    /// `safe` and `keep` keep an sRGB profile (the output's pixels are still in it) in every format,
    /// and never a Display P3 one (converted from, so the pixels no longer are); `copyright` keeps none.
    @Test func theColourProfileIsKeptOnlyWhileThePixelsAreInIt() throws {
        try FileManager.default.createDirectory(atPath: directory.url("src"), withIntermediateDirectories: true)
        _ = try PythonOracle.run(
            """
            import sys
            from PIL import Image, ImageCms
            image = Image.open(sys.argv[1])
            image.save(sys.argv[2], quality=90, icc_profile=ImageCms.ImageCmsProfile(ImageCms.createProfile('sRGB')).tobytes())
            """, [Fixtures.path("images/formats/small-200x150.jpg"), directory.url("src/srgb.jpg")])
        CommandRunner.copyFixture("images/formats/display-p3.jpg", to: directory, as: "src/p3.jpg")
        let variants = [
            "a=100x100,jpeg,q70,metadata=safe", "b=100x100,webp,q70,metadata=keep", "c=100x100,avif,q50,metadata=safe",
            "d=100x100,png,metadata=keep", "e=100x100,jpeg,q70,metadata=copyright",
        ].flatMap { ["--variant", $0] }
        #expect(try batch(variants, into: "out").allSatisfy { $0.status == .done })
        let files = directory.files(under: "out").map { directory.url("out/" + $0) }
        #expect(files.count == 10)
        for (name, found) in try tags(of: files) {
            let profile = found.keys.contains { $0.hasPrefix("ICC") }
            #expect(profile == (name.hasPrefix("srgb-") && !name.contains("-e.")), "\(name): \(found.keys.sorted())")
        }
    }

    /// `strip` is what every release before policies did, to the byte: the `web` preset's outputs of
    /// a camera photo full of metadata, a plain JPEG (the direct libjpeg path), a Display P3 photo
    /// and a PNG hash as those of commit 4de101a's binary did (Debian 12's libvips 8.14.1, libjpeg-turbo
    /// 2.1.5, libwebp 1.2.4; a new library version may change them, and then these are made again
    /// with the release before the change that is being tested).
    @Test func stripMakesTheBytesReleasesBeforePoliciesMade() throws {
        CommandRunner.copyFixture("metadata/camera.jpg", to: directory, as: "src/camera.jpg")
        for name in ["landscape.jpg", "display-p3.jpg", "landscape-png.png"] {
            CommandRunner.copyFixture("images/formats/" + name, to: directory, as: "src/" + name)
        }
        let expected = [
            "camera-large.jpg": "97d0975b78d31c39c86d5e1cf3b7e25ccfd32359aa4d3f817b78b07d9e1f497c",
            "camera-medium.webp": "2d4f826ad7b73b94154ac8b3b82daf5507c503357ef75e8826b27b053c4052c7",
            "camera-thumb.webp": "a8aa8aee4ae51ab3621b257b57670e62467017da8723c5b43308215b15f1f29e",
            "display-p3-large.jpg": "35689610bed23b25624213bf7677da5103f41174242f9d2f0c8415ad1a9a39aa",
            "display-p3-medium.webp": "95625d187135d71401f84259b2150e26f24200e26961cf8889dd29183cc03eab",
            "display-p3-thumb.webp": "93c98d9988b176e6706258df818692481b285e6932b1635900cc571fcf67b246",
            "landscape-large.jpg": "7617e596b2b95238a834ad03e36e92250bbaee8a7ee822468c3473a65c6d5118",
            "landscape-medium.webp": "b2de871f5e272fa98f456363c456d88b2352a64610d2b65515619123b1111a2e",
            "landscape-thumb.webp": "39a4d0031b5e9dc0d664df25ad19c7bd4469ba2984a3cb1c9738e16be7d0cebd",
            "landscape-png-large.jpg": "d3daa1d66d268a30a08b83f9ebd04fc98aa5c2b4c661913c6fae32b40cf1468e",
            "landscape-png-medium.webp": "8b76413d8251a9ba3fa0ecec0a8f7ad1930509eede7f8013f185bf9b834bd04e",
            "landscape-png-thumb.webp": "5a54fe0e6484cd5d45f0ecd0aec33a9e0bc9bdb00067aa81dfaf4dc1a799bbd0",
        ]
        for arguments in [[], ["--metadata", "strip"]] {
            let destination = arguments.isEmpty ? "default" : "strip"
            #expect(try batch(arguments, into: destination).allSatisfy { $0.status == .done })
            var hashes: [String: String] = [:]
            for name in directory.files(under: destination) {
                hashes[name] = SHA256Digest.hash(try Data(contentsOf: URL(fileURLWithPath: directory.url(destination + "/" + name)))).hex
            }
            #expect(hashes == expected, "\(arguments)")
        }
    }
}
