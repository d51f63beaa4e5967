// Hostile files through `imagepipe batch` built with AddressSanitizer and UBSan: no report, clear errors.
import Foundation
import ImagePipeTestSupport
import Testing

/// The binary built with the sanitizers, when `make fuzz-check` built one.
private let sanitizedBinary = ProcessInfo.processInfo.environment["IMAGEPIPE_SANITIZED_BINARY"]

/// The hostile fixtures, PngSuite's corrupt files and a few good images, in one folder, through the
/// real binary built with the sanitizers (`make fuzz-check` takes it from the fuzzing build, .build-fuzz/bin, and names it in
/// `IMAGEPIPE_SANITIZED_BINARY`; `make test` runs this suite that way). Once with one JPEG variant at
/// the source's size, which plain JPEGs take through the direct libjpeg path (jpeg_direct.c), once with
/// the web preset, which goes through libvips and the shim for every image.
@Suite(.offThePool, .serialized, .enabled(if: sanitizedBinary != nil, "IMAGEPIPE_SANITIZED_BINARY names no binary"))
struct SanitizedBatchTests {
    let directory = TemporaryDirectory()

    static let good = [
        "images/formats/small-200x150.jpg", "images/formats/grey.jpg", "images/formats/progressive.jpg",
        "images/formats/display-p3.jpg", "images/exif-orientation/Landscape_6.jpg", "images/formats/tiny.png",
        "images/formats/alpha-webp.webp", "images/formats/animated.gif", "images/formats/landscape-tiff.tiff",
        "images/formats/landscape-heic.heic", "images/formats/landscape-avif.avif",
    ]
    static let bad =
        Fixtures.files(in: "hostile").map { "hostile/" + $0 } + Fixtures.files(in: "pngsuite").filter { $0.hasPrefix("x") }.map { "pngsuite/" + $0 }

    @Test(arguments: [["--variant", "full=4000x4000,jpeg,q80"], ["--preset", "web"]])
    func badFilesFailWithAReasonAndTheRestGoOn(_ variants: [String]) throws {
        for (number, fixture) in (Self.good + Self.bad).enumerated() {
            // Numbered, so that names do not collide and each record can be traced to its fixture.
            CommandRunner.copyFixture(fixture, to: directory, as: "src/\(number)-" + (fixture as NSString).lastPathComponent)
        }
        let output = try CommandRunner.run(
            executable: try #require(sanitizedBinary),
            ["batch", directory.url("src"), "--dest", directory.url("out"), "--manifest", directory.url("manifest.jsonl"), "--jobs", "2"]
                + variants,
            environment: [
                // Leaks count too, but for the one Debian's AV1 decoder leaves at exit (Tests/Fuzz/lsan.supp).
                "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=1", "UBSAN_OPTIONS": "print_stacktrace=1",
                "LSAN_OPTIONS": "suppressions=\(Fixtures.repository)/Tests/Fuzz/lsan.supp:print_suppressions=0",
                "SWIFT_BACKTRACE": "enable=no",
            ])

        for report in ["AddressSanitizer", "LeakSanitizer", "runtime error:", "UndefinedBehaviorSanitizer"] {
            #expect(!output.stderr.contains(report), "\(output.stderr.suffix(6000))")
        }
        #expect(output.status == 1, "some sources fail, none crash the run: \(output.stderr.suffix(3000))")

        let text = try String(contentsOfFile: directory.url("manifest.jsonl"), encoding: .utf8)
        let records = try text.split(separator: "\n").map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
        let bySource = Dictionary(uniqueKeysWithValues: records.map { ($0["source"] as! String, $0) })
        for (number, fixture) in (Self.good + Self.bad).enumerated() {
            let name = "\(number)-" + (fixture as NSString).lastPathComponent
            // Files that are no image at all (empty, text, SVG, PDF) may be skipped as such rather than failed.
            let record = try #require(bySource[name], "\(fixture) has no record")
            let status = record["status"] as? String
            // Every image ran in a sandboxed helper (built with the sanitizers too): none of them died.
            #expect(
                !["decoder_crashed", "job_timeout", "helper_unavailable"].contains(record["error_code"] as? String ?? ""), "\(fixture): \(record)")
            if Self.good.contains(fixture) {
                #expect(status == "done", "\(fixture): \(record)")
            } else {
                #expect(status == "failed" || status == "skipped", "\(fixture): \(record)")
                let reason = (record["error"] ?? record["reason"]) as? String ?? ""
                #expect(reason.count >= 10 && !reason.contains("unknown error"), "\(fixture): \(record)")
                if fixture.contains("/bomb") { #expect(record["error_code"] as? String == "image_too_large", "\(fixture): \(record)") }
            }
        }
    }
}
