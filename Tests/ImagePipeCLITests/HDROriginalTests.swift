import Foundation
import ImagePipe
import ImagePipeTestSupport
import Testing

/// HDR originals from phones, through the real binary with `--hdr drop`: every manifest line of one
/// says that it carries a gain map and that the variants are its SDR picture, in the sandboxed
/// helpers and in the worker alike; an ordinary photo's line says nothing of it. (HDRCommandTests:
/// the variants that carry it.)
@Suite(.offThePool) struct HDROriginalTests {
    let directory = TemporaryDirectory(prefix: "imagepipe-hdr")

    @Test(arguments: ["on", "off"])
    func theManifestSaysWhichOriginalsCarryAGainMapAndThatTheVariantsDoNot(sandbox: String) throws {
        CommandRunner.copyFixture("images/hdr/ultra-hdr.jpg", to: directory, as: "src/ultra-hdr.jpg")
        CommandRunner.copyFixture("images/hdr/iphone-13-pro-max.heic", to: directory, as: "src/iphone.heic")
        CommandRunner.copyFixture("images/formats/landscape.jpg", to: directory, as: "src/plain.jpg")
        let run = try CommandRunner.run([
            "batch", directory.url("src"), "--dest", directory.url("out"), "--manifest", directory.url("manifest.jsonl"),
            "--variant", "large=1200x1200,jpeg,q80", "--sandbox", sandbox, "--hdr", "drop",
        ])
        #expect(run.status == 0, "\(run.stderr)")
        let text = try String(contentsOfFile: directory.url("manifest.jsonl"), encoding: .utf8)
        var lines: [String: [String: Any]] = [:]
        for line in text.split(separator: "\n") {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            lines[object["source"] as? String ?? ""] = object
        }
        let expected = ["ultra-hdr.jpg": "ultra_hdr_jpeg", "iphone.heic": "apple_heic"]
        for (source, kind) in expected {
            let gainMap = lines[source]?["gain_map"] as? [String: Any]
            #expect(gainMap?["kind"] as? String == kind, "\(source): \(lines[source] ?? [:])")
            #expect(gainMap?["carried"] as? Bool == false, "\(source)")
            #expect((gainMap?["reason"] as? String)?.contains("SDR picture") == true, "\(source)")
            #expect(lines[source]?["status"] as? String == "done", "\(source)")
        }
        #expect(lines["plain.jpg"]?["status"] as? String == "done")
        #expect(lines["plain.jpg"]?["gain_map"] == nil, "an ordinary photo says nothing of HDR: \(lines["plain.jpg"] ?? [:])")
    }
}
