import Foundation
import ImagePipe
import ImagePipeTestSupport
import Testing

@Suite struct KeyTemplateTests {
    let template = KeyTemplate.default

    @Test func topLevelSourcesGetNoLeadingSlash() throws {
        let values = KeyTemplate.Values(relativePath: "beach.jpg", sha256: nil)
        #expect(try template.key(for: values, variant: "large", ext: "jpg") == "beach-large.jpg")
    }

    @Test func nestedDirectoriesAreKept() throws {
        let values = KeyTemplate.Values(relativePath: "2024/trip/IMG_0001.HEIC", sha256: nil)
        #expect(values.sourceExtension == "heic")
        #expect(try template.key(for: values, variant: "thumb", ext: "webp") == "2024/trip/IMG_0001-thumb.webp")
    }

    @Test func spacesAndNonASCIILettersSurvive() throws {
        let values = KeyTemplate.Values(relativePath: "Été 2024/plage à Nice (1)+.jpg", sha256: nil)
        #expect(try template.key(for: values, variant: "large", ext: "jpg") == "Été 2024/plage à Nice (1)+-large.jpg")
    }

    @Test func hashPlaceholders() throws {
        let sha = String(repeating: "ab", count: 32)
        let custom = try KeyTemplate("{hash}/{variant}.{ext}")
        #expect(custom.usesHash)
        #expect(
            try custom.key(for: .init(relativePath: "x.png", sha256: sha), variant: "v", ext: "png")
                == "abababababababab/v.png")
        #expect(
            try KeyTemplate("{sha256}-{variant}.{srcext}").key(for: .init(relativePath: "a/x.PNG", sha256: sha), variant: "v", ext: "jpg")
                == sha + "-v.png")
    }

    @Test func dotFilesAndDotlessNames() throws {
        #expect(KeyTemplate.Values(relativePath: "README", sha256: nil).stem == "README")
        #expect(KeyTemplate.Values(relativePath: "a.b.c.jpg", sha256: nil).stem == "a.b.c")
    }

    @Test(arguments: [
        "/{stem}-{variant}.{ext}", "../{stem}-{variant}.{ext}", "{dir}/../x/{stem}-{variant}.{ext}", "./{stem}-{variant}.{ext}", "{stem}.{ext}",
        "{nope}/{variant}", "{stem-{variant}", "{stem}}{variant}", "",
    ])
    func rejectsBadTemplates(_ text: String) {
        #expect(throws: ImagePipeError.self) { try KeyTemplate(text) }
    }

    @Test func keysThatWouldEscapeAreRejected() throws {
        // Templates with '..' are refused when parsed; every built key is checked again before use.
        for escaping in ["../{stem}-{variant}.{ext}", "{dir}/../../{stem}-{variant}.{ext}"] {
            #expect(throws: ImagePipeError.self) { try KeyTemplate(escaping) }
        }
        for bad in ["/etc/passwd", "a/../b", "a//b", "./a", "a/.", "", String(repeating: "k", count: 1025)] {
            #expect(throws: ImagePipeError.self) { try KeyTemplate.validate(key: bad) }
        }
        try KeyTemplate.validate(key: "a/b..c/..d")
    }
}

/// Names whose segments start with a combining mark (fixtures/fuzz/crashes/key-template/): a `/` and
/// the mark after it are one character, so keys are cut into segments at `/` bytes.
@Suite struct KeyTemplateSegmentTests {
    let mark = "\u{301}"

    @Test func aDotDotSegmentBehindACombiningMarkIsStillRefused() throws {
        // Cut at characters, `../\u{301}x` was one segment: the key left the destination.
        for key in ["../\(mark)x/a.jpg", "a/../../\(mark)b", "/\(mark)etc/passwd", "a//\(mark)b", "a/./\(mark)b"] {
            #expect(throws: ImagePipeError.self, "\(key)") { try KeyTemplate.validate(key: key) }
        }
        let values = KeyTemplate.Values(relativePath: "../\(mark)x/a.jpg", sha256: nil)
        #expect(throws: ImagePipeError.self) { try KeyTemplate.default.key(for: values, variant: "large", ext: "jpg") }
        #expect(throws: ImagePipeError.self) { try KeyTemplate("../\(mark){stem}-{variant}.{ext}") }
        #expect(throws: ImagePipeError.self) { try KeyTemplate("/\(mark){stem}-{variant}.{ext}") }
        try KeyTemplate.validate(key: "a/\(mark)b/\(mark)..c")
    }

    /// fixtures/fuzz/crashes/key-template/leading-slashes-share-a-dir: `//.` and `/.` had the same
    /// `{dir}`, so a template that runs `{dir}` into the next placeholder gave both one key.
    @Test func namesThatDifferInLeadingSlashesNeverShareAKey() throws {
        let template = try KeyTemplate("x{dir}{stem}-{variant}.{ext}")
        var seen: [String: String] = [:]
        for name in ["a.jpg", "/a.jpg", "//a.jpg", "///a.jpg", "/d/a.jpg", "d/a.jpg", "//d/a.jpg", "/d//a.jpg"] {
            let values = KeyTemplate.Values(relativePath: name, sha256: nil)
            guard let key = try? template.key(for: values, variant: "t", ext: "jpg") else { continue }
            #expect(seen[key] == nil, "'\(name)' took the key '\(key)' of '\(seen[key] ?? "")'")
            seen[key] = name
        }
        #expect(KeyTemplate.Values(relativePath: "//a.jpg", sha256: nil).dir == "//")
        #expect(KeyTemplate.Values(relativePath: "/a.jpg", sha256: nil).dir == "/")
        #expect(KeyTemplate.Values(relativePath: "d/a.jpg", sha256: nil).dir == "d")
        // A slash with a combining mark after it is still where the directory ends
        // (fixtures/fuzz/crashes/key-template/slash-before-combining-mark).
        let marked = KeyTemplate.Values(relativePath: "d/\(mark)a.jpg", sha256: nil)
        #expect(marked.dir == "d" && marked.stem == "\(mark)a" && marked.sourceExtension == "jpg")
        let leading = KeyTemplate.Values(relativePath: "/\(mark)a.jpg", sha256: nil)
        #expect(leading.dir == "/" && leading.stem == "\(mark)a")
    }
}
