import Foundation
import ImagePipeTestSupport
import ImagePipeVipsTestSupport
import Testing

/// The committed `deploy/` files: the example configuration loads and its presets work, and the
/// systemd units pass `systemd-analyze verify`, so none of them can rot unnoticed.
@Suite(.offThePool) struct DeployFilesTests {
    let directory = TemporaryDirectory(prefix: "imagepipe-deploy")
    let deploy = Fixtures.repository + "/deploy"
    var example: String { deploy + "/imagepipe.example.toml" }

    @Test func theExampleConfigurationIsValidForWatchAndBatch() throws {
        let watch = try CommandRunner.run(["config", "watch", "--config", example], environment: [:])
        #expect(watch.status == 0, "\(watch.stderr)")
        #expect(watch.stdout.contains("queue = \"/var/lib/imagepipe/queue\"  # \(example):"), "\(watch.stdout)")
        #expect(watch.stdout.contains("preset = \"gallery\"  # \(example):"))
        // Watch serves uploads, whose names strangers choose: its keys come from the content.
        #expect(watch.stdout.contains("key = \"{dir}/{stem}-{hash}-{variant}.{ext}\"  # \(example):"), "\(watch.stdout)")

        let batch = try CommandRunner.run(["config", "batch", "--config", example, directory.path], environment: [:])
        #expect(batch.status == 0, "\(batch.stderr)")
        #expect(batch.stdout.contains("key = \"{dir}/{stem}-{variant}.{ext}\"  # \(example):"), "\(batch.stdout)")
    }

    @Test(arguments: [
        ("gallery", ["large": (400, 300), "large-avif": (400, 300), "medium": (400, 300), "thumb": (300, 300)]),
        ("avatars", ["small": (64, 64), "medium": (256, 256)]),
    ])
    func theExamplePresetsMakeTheirVariants(_ preset: String, _ sizes: [String: (Int, Int)]) throws {
        CommandRunner.copyFixture("images/formats/small-400x300.jpg", to: directory, as: "src/photo.jpg")
        let output = try CommandRunner.run(
            [
                "batch", "--config", example, "--preset", preset, "--dest", directory.url("out"),
                directory.url("src"),
            ], environment: [:])
        #expect(output.status == 0, "\(output.stderr)")
        let files = directory.files(under: "out")
        #expect(files.count == sizes.count, "\(files)")
        for file in files {
            let variant = String(file.dropFirst("photo-".count).prefix { $0 != "." })
            let info = try VipsProbe.info(Data(contentsOf: URL(fileURLWithPath: directory.url("out/" + file))))
            let expected = try #require(sizes[variant], "\(file)")
            #expect(info.width == expected.0 && info.height == expected.1, "\(file): \(info.width)x\(info.height)")
        }
    }

    @Test(
        .requires(.systemdAnalyze),
        arguments: ["imagepipe.service", "imagepipe@.service"])
    func theUnitsVerify(_ unit: String) throws {
        // The units name the installed binary and configuration; here they point at the built ones.
        let text = try String(contentsOfFile: deploy + "/" + unit, encoding: .utf8)
            .replacingOccurrences(of: "/usr/bin/imagepipe", with: CommandRunner.binary)
        #expect(text.contains("ExecStart=\(CommandRunner.binary) watch --config /etc/imagepipe/"))
        let path = directory.write(unit, text)
        let instance = unit.replacingOccurrences(of: "@.", with: "@example.")
        let output = try CommandRunner.run(executable: RequiredTool.systemdAnalyze.located(), ["verify", directory.url(instance)])
        #expect(output.status == 0, "\(output.stderr)")
        // verify reports unknown or malformed settings as warnings, with the file's name, and exits 0.
        let warnings = output.stderr.split(separator: "\n").filter { $0.contains(path) || $0.contains(instance) }
        #expect(warnings.isEmpty, "\(warnings)")
    }
}
