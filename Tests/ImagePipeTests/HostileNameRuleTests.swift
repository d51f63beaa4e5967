// The one rule for hostile names, at the core's seams: read as they are, hidden ones counted, keys refused rather than cleaned up.
import Foundation
import ImagePipe
import ImagePipeTestKit
import ImagePipeTestSupport
import Synchronization
import Testing

/// Names strangers choose (`.`/`..` and empty segments, percent escapes, control characters,
/// leading slashes) through the scanner, URL parsing and the key template, with the test kit's
/// in-memory objects. The same names against moto, the Supabase stand-in and PostgreSQL:
/// `HostileNameTests`, `HostileSupabaseNameTests`, `QueuedObjectNameTests`.
@Suite struct HostileNameRuleTests {
    let sources = InMemorySources(scheme: "s3", buckets: ["media"])
    let directory = TemporaryDirectory()

    @Test func aListingKeepsDotSegmentsAndCountsHiddenNamesItLeavesOut() throws {
        let keys = [
            "orig/a.jpg", "orig/./dot.jpg", "orig/a/../../../escaped2.jpg", "orig/../../../../tmp/x/escaped.jpg",
            "orig/..%2F..%2Fescaped3.jpg", "orig//double.jpg", "orig/.cache/x.jpg", "orig/ctl\u{1}.jpg",
        ]
        for key in keys { sources.put(Data(key.utf8), key: key) }
        let scan = try SourceScanner(inputs: [.init("s3://media/orig")], sources: ["s3": sources]).scan()
        #expect(
            scan.jobs.map(\.relativePath)
                == ["../../../../tmp/x/escaped.jpg", "./dot.jpg", "/double.jpg", "a.jpg", "a/../../../escaped2.jpg", "ctl\u{1}.jpg"])
        #expect(scan.jobs.map(\.path).contains("s3://media/orig/./dot.jpg"), "the key as it is, not orig/dot.jpg")
        #expect(scan.hidden == ["s3://media/orig/..%2F..%2Fescaped3.jpg", "s3://media/orig/.cache/x.jpg"])
    }

    @Test func aNameThatStartsWithACombiningMarkKeepsItWhenItsFoldersPrefixIsTakenOff() throws {
        // `orig/` and U+0301 are one Character: cut by characters, the job was `x.jpg`, another name.
        sources.put(Data("marked".utf8), key: "orig/\u{301}x.jpg")
        let scan = try SourceScanner(inputs: [.init("s3://media/orig")], sources: ["s3": sources]).scan()
        #expect(scan.jobs.map(\.relativePath) == ["\u{301}x.jpg"])
        #expect("web/\u{301}x.jpg".afterPrefixBytes("web/") == "\u{301}x.jpg")
        #expect("other/x.jpg".afterPrefixBytes("web/") == "other/x.jpg")
    }

    @Test func aLocalFolderCountsItsHiddenNamesAndTheSummarySaysHowMany() async throws {
        directory.write("src/a.jpg", ScriptedCompressor.image("x"))
        directory.write("src/.DS_Store", "x")
        directory.write("src/.cache/b.jpg", "x")
        directory.write("src/deep/..%2Fc.jpg", "x")
        let scan = try SourceScanner(root: directory.url("src")).scan()
        #expect(scan.jobs.map(\.relativePath) == ["a.jpg"])
        #expect(scan.hidden == [".DS_Store", ".cache", "deep/..%2Fc.jpg"])

        let handler = FileHandler(compressor: ScriptedCompressor(), storage: InMemoryStorage())
        let summary = await BatchRunner(scanner: SourceScanner(root: directory.url("src")), pipeline: JobPipeline(handler: handler))
            .run(scan) { _, _ in }
        #expect(summary.hidden == 3 && summary.total == 1)
        #expect(summary.lines[0].hasPrefix("1 done, 0 failed, 3 hidden left out in "), "\(summary.lines)")
    }

    @Test func isHiddenTakesDotAndDotDotSegmentsForPathSyntax() {
        for hidden in [".x.jpg", "a/.b/c.jpg", "..x", "..%2Fx.jpg", "a/...", "./.x"] { #expect(SourceScanner.isHidden(hidden), "\(hidden)") }
        for shown in ["x.jpg", "./x.jpg", "a/../x.jpg", "a//x.jpg", "/x.jpg", "x./y.", "%2e%2e/x"] {
            #expect(!SourceScanner.isHidden(shown), "\(shown)")
        }
    }

    @Test func aURLKeepsEverySlashOfItsKey() throws {
        #expect(try ObjectLocation(parsing: "s3://media//lead.jpg").key == "/lead.jpg")
        #expect(try ObjectLocation(parsing: "s3://media/a/../b.jpg").key == "a/../b.jpg")
        #expect(try ObjectLocation(parsing: "s3://media/orig").key == "orig")
        #expect(try ObjectLocation(parsing: "s3://media").key == "")
        #expect(try ObjectLocation(parsing: "s3://media/").key == "")
    }

    @Test func keysFromHostileNamesAreRefusedNotCleanedUp() throws {
        let template = KeyTemplate.default
        func key(_ name: String) -> Result<String, ImagePipeError> {
            Result { () throws(ImagePipeError) in try template.key(for: .init(relativePath: name, sha256: nil), variant: "t", ext: "jpg") }
        }
        let refused = [
            "./dot.jpg": "empty or '.' path segment", "a/../../../escaped2.jpg": "'..' would escape the destination",
            "../../../../tmp/x/escaped.jpg": "'..' would escape the destination", "a//b.jpg": "empty or '.' path segment",
            // A leading slash stays: the key is not `lead-t.jpg`, which `lead.jpg` makes.
            "/lead.jpg": "absolute keys would escape the destination", "/a/lead.jpg": "absolute keys would escape the destination",
            "new\nline.jpg": "contains the control character U+000A", "del\u{7F}.jpg": "contains the control character U+007F",
            "nul\u{0}.jpg": "contains a NUL byte",
        ]
        for (name, reason) in refused {
            guard case .failure(let error) = key(name) else {
                Issue.record("'\(name)' made a key")
                continue
            }
            #expect(error.code == .invalidKey && error.reason.hasSuffix(reason), "\(name): \(error.reason)")
            #expect(!error.reason.unicodeScalars.contains { $0.value < 0x20 }, "the reason shows control characters escaped")
        }
        // Escapes are characters of a name, never decoded into slashes or dots.
        #expect(try key("..%2F..%2Fescaped3.jpg").get() == "..%2F..%2Fescaped3-t.jpg")
        #expect(try key("%2e%2e/pct.jpg").get() == "%2e%2e/pct-t.jpg")
        // A name that does not go into the key does not matter.
        let hashed = try KeyTemplate("{hash}/{variant}.{ext}")
        #expect(
            try hashed.key(for: .init(relativePath: "../../x.jpg", sha256: String(repeating: "ab", count: 32)), variant: "t", ext: "jpg")
                == "abababababababab/t.jpg")
    }
}
