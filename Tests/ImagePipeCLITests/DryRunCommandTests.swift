// `batch --dry-run` on hostile files: what it predicts against what the real run then does.
import Foundation
import ImagePipe
import ImagePipeTestSupport
import Testing

/// The dry run reads headers and file ends; its `write`, `skip` and `fail` must be the real run's.
@Suite(.offThePool) struct DryRunCommandTests {
    let directory = TemporaryDirectory(prefix: "imagepipe-dry-run")

    /// A 20000x20000 PNG (400 megapixels) of a few hundred bytes: its header alone refuses it.
    static func hugePNG() -> Data {
        func chunk(_ type: String, _ body: [UInt8]) -> [UInt8] {
            let typed = Array(type.utf8) + body
            let length = UInt32(body.count).bigEndian, crc = UInt32(truncatingIfNeeded: CRC32.of(typed)).bigEndian
            return withUnsafeBytes(of: length) { Array($0) } + typed + withUnsafeBytes(of: crc) { Array($0) }
        }
        let size = withUnsafeBytes(of: UInt32(20000).bigEndian) { Array($0) }
        let header = size + size + [8, 2, 0, 0, 0]
        // An IDAT of a stored (uncompressed) zlib block: enough to look like a PNG, far from its pixels.
        let idat: [UInt8] = [0x78, 0x01, 0x01, 0x01, 0x00, 0xFE, 0xFF, 0x00, 0x00, 0x01, 0x00, 0x01]
        return Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + chunk("IHDR", header) + chunk("IDAT", idat) + chunk("IEND", []))
    }

    @Test func predictsWhatTheRunDoesForBombsTruncatedAndMisnamedFilesAndEndsWithCounts() throws {
        for name in ["bomb.png", "bomb.jpg", "bomb.webp", "truncated.jpg", "truncated.png", "text.jpg", "empty.jpg", "garbage.png", "image.svg"] {
            CommandRunner.copyFixture("hostile/" + name, to: directory, as: "in/" + name)
        }
        CommandRunner.copyFixture("images/formats/landscape.jpg", to: directory, as: "in/landscape.jpg")
        directory.write("in/huge.png", Self.hugePNG())
        let arguments = ["batch", directory.url("in"), "--dest", directory.url("out"), "--key", "{stem}-{srcext}-{variant}.{ext}"]

        let dry = try CommandRunner.run(arguments + ["--dry-run"])
        #expect(dry.status == 1, "some would fail")
        #expect(!FileManager.default.fileExists(atPath: directory.url("out/landscape-jpg-large.jpg")), "nothing written")
        // text.jpg and empty.jpg are no images whatever their names: skipped, as image.svg is.
        #expect(dry.stderr.contains("imagepipe: dry run: 1 to write, 3 to skip, 7 would fail; nothing was written"), "\(dry.stderr)")
        var predicted: [String: (action: String, code: String)] = [:]
        for line in dry.stdout.split(separator: "\n") {
            let action = String(line.prefix(while: { $0 != " " }))
            let rest = line.drop(while: { $0 != " " }).drop(while: { $0 == " " })
            let source = String(rest.prefix(while: { $0 != ":" && $0 != " " }))
            let code = line.range(of: #"\[[a-z_]+\]$"#, options: .regularExpression).map { String(line[$0].dropFirst().dropLast()) } ?? ""
            predicted[source] = (action, code)
        }
        #expect(predicted["huge.png"]?.code == "image_too_large" && predicted["truncated.jpg"]?.code == "corrupt_image", "\(dry.stdout)")
        #expect(dry.stdout.contains("write  landscape.jpg (900x600 jpeg) → landscape-jpg-large.jpg"), "\(dry.stdout)")

        let real = try CommandRunner.run(arguments + ["--manifest", directory.url("m.jsonl")])
        #expect(real.status == 1)
        let records = try ManifestReader.read(directory.url("m.jsonl"))
        #expect(records.count == 11)
        for record in records {
            let expected: (action: String, code: String) =
                switch record.status {
                case .done: ("write", "")
                case .skipped: ("skip", record.skipCode?.rawValue ?? "")
                case .failed: ("fail", record.errorCode?.description ?? "")
                }
            let guess = predicted[record.source]
            #expect(
                guess?.action == expected.action && guess?.code == expected.code,
                "\(record.source): predicted \(String(describing: guess)), ran \(expected)")
        }
    }

    /// A source that would be written writes every output it has: one already there is never said
    /// to stay "in place", and each says what it held, this original's own or another's.
    @Test func eachOutputAWriteReplacesSaysWhatItHeld() throws {
        CommandRunner.copyFixture("images/formats/landscape.jpg", to: directory, as: "in/photo.jpg")
        CommandRunner.copyFixture("images/formats/panorama.jpg", to: directory, as: "other/tower.jpg")
        let thumb = "t=64x64,webp,q60,cover"
        let base = ["batch", directory.url("in"), "--dest", directory.url("out"), "--variant", "s=120x120,jpeg,q70"]
        #expect(try CommandRunner.run(base + ["--variant", thumb]).status == 0)
        func dryRun(_ extra: [String]) throws -> String {
            let output = try CommandRunner.run(base + extra + ["--dry-run"])
            #expect(output.status == 0, "\(output)")
            #expect(!output.stdout.contains("(in place)"), "\(output.stdout)")
            return output.stdout
        }
        // --force: both outputs are this original's, made with these settings, and written again.
        let forced = try dryRun(["--variant", thumb, "--force"])
        #expect(forced.contains("photo-s.jpg (rewrites its own output), photo-t.webp (rewrites its own output)"), "\(forced)")
        // One variant changed: that output was made with other settings; the other is written again.
        let changed = try dryRun(["--variant", "t=96x96,webp,q60,cover"])
        #expect(
            changed.contains("photo-s.jpg (rewrites its own output), photo-t.webp (replaces its own output, made with other settings)"), "\(changed)")
        // The original edited since (another photo under its name), with --update.
        CommandRunner.copyFixture("images/formats/tall.jpg", to: directory, as: "in/photo.jpg")
        let updated = try dryRun(["--variant", thumb, "--update"])
        #expect(updated.contains("photo-s.jpg (replaces the output of its earlier version)"), "\(updated)")
        // Another original's outputs under the same keys, with --overwrite.
        let overwritten = try CommandRunner.run(
            [
                "batch", directory.url("other/tower.jpg"), "--dest", directory.url("out"), "--variant", "s=120x120,jpeg,q70", "--variant", thumb,
                "--key", "photo-{variant}.{ext}", "--overwrite", "--dry-run",
            ])
        #expect(overwritten.stdout.contains("photo-s.jpg (replaces another original's)"), "\(overwritten)")
    }
}

/// CRC-32 (ISO-HDLC), for the chunks of a hand-made PNG.
enum CRC32 {
    static func of(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }
}
