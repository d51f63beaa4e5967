// Fuzz targets for names strangers choose: queued sources and their rows, output keys, file signatures.
import Foundation
import ImagePipe
import ImagePipePostgres

enum NameTargets {
    /// A PostgreSQL job row's `source` text and, after a NUL, its `options` JSON (a claim reads
    /// nothing else of the row: the history of attempts stays in SQL). The source's name then makes
    /// output keys, which must stay inside the destination; options that read give a focal point
    /// inside the image and read back as they were.
    static func jobRow(_ data: Data) {
        let (source, options) = data.twoTexts
        if let parsed = try? QueuedJobOptions(json: options) {
            if let focus = parsed.focus {
                require((0...1).contains(focus.x) && (0...1).contains(focus.y), "focus \(focus) is outside the image")
            }
            require((try? QueuedJobOptions(json: parsed.json)) == parsed, "options '\(parsed.json)' do not read back")
        }
        if JobSource.refusal(of: source) != nil { return }
        let job = JobSource.job(for: source, attempt: 1)
        if let key = JobSource.objectKey(of: source) {
            require(source.utf8.reversed().starts(with: key.utf8.reversed()), "key '\(key)' is not the end of '\(source)'")
        }
        checkKeys(relativePath: job.relativePath, template: .default)
    }

    /// `--key` templates and hostile source names (`..`, `.`, empty segments, percent escapes,
    /// control characters, leading slashes): the template before a NUL, the name after it.
    static func keyTemplate(_ data: Data) {
        let (text, name) = data.twoTexts
        let template = (try? KeyTemplate(text)) ?? .default
        checkKeys(relativePath: name, template: template)
        // The name's bytes as a file delivered to a queue directory: invalid UTF-8 written as %XX.
        let bytes = data.firstIndex(of: 0).map { data[($0 + 1)...] } ?? data[...]
        let delivered = RawPath.escape(bytes)
        if let valid = String(validating: bytes, as: UTF8.self) { require(delivered == valid, "valid UTF-8 was escaped") }
        checkKeys(relativePath: delivered, template: template)
        // The same name queued as a path, and as an object's key.
        checkKeys(relativePath: JobSource.job(for: name, attempt: 1).relativePath, template: template)
        checkKeys(relativePath: JobSource.job(for: "s3://media/" + name, attempt: 1).relativePath, template: template)
    }

    /// The signature sniffer on a file's first bytes, as the reader hands them over, and on more;
    /// and the rule that takes every file it recognises, whatever the file is called.
    static func sniff(_ data: Data) {
        let bytes = [UInt8](data)
        let head = ImageSignature.fileExtension(of: Array(bytes.prefix(ImageSignature.headLength)))
        require(head == ImageSignature.fileExtension(of: bytes), "the first 16 bytes and the whole file disagree")
        if let head { require(["jpg", "png", "gif", "webp", "tif", "heic", "avif"].contains(head), "'\(head)'") }
        let skipped = ImageSignature.skipReason(head: bytes.prefix(ImageSignature.headLength))
        require((skipped == nil) == (head != nil), "the rule and the sniffer disagree")
    }

    /// Every key the template makes for the name is one the destination can hold: relative (no
    /// leading `/`), without a single `..`, `.` or empty segment (so it can neither leave the
    /// destination nor stand for another source's key once a file system or store resolves it), and
    /// without control characters. Segments are cut at `/` bytes, as the file system cuts them (not
    /// at `/` characters: a `/` and a combining mark after it make one character). A name with a
    /// leading `/` keeps it: it never makes the key its name without the slash would.
    private static func checkKeys(relativePath: String, template: KeyTemplate) {
        let values = KeyTemplate.Values(relativePath: relativePath, sha256: String(repeating: "ab", count: 32))
        let slash = UInt8(ascii: "/"), dot = UInt8(ascii: ".")
        for variant in ["large", "v"] {
            guard let key = try? template.key(for: values, variant: variant, ext: "jpg") else { continue }
            require(!key.isEmpty && key.utf8.first != slash && key.utf8.count <= 1024, "key '\(key)'")
            require(!key.utf8.contains { $0 < 0x20 || $0 == 0x7F }, "key '\(key)' has a control character")
            for segment in key.utf8.split(separator: slash, omittingEmptySubsequences: false) {
                require(!segment.isEmpty && !segment.elementsEqual([dot]), "key '\(key)' has an empty or '.' segment")
                require(!segment.elementsEqual([dot, dot]), "key '\(key)' from '\(relativePath)' has a '..' segment")
            }
            if relativePath.utf8.first == slash, relativePath.utf8.count > 1, template.text.contains("{dir}") {
                let unslashed = KeyTemplate.Values(
                    relativePath: String(decoding: relativePath.utf8.dropFirst(), as: UTF8.self), sha256: values.sha256)
                require(
                    key != (try? template.key(for: unslashed, variant: variant, ext: "jpg")), "'\(relativePath)' took another name's key '\(key)'")
            }
        }
    }
}
