// The one rule of what a source is: its first bytes decide, for every kind of source, whatever its name.
//
// It runs in the worker, on strangers' bytes, before any image helper starts: a file that is no
// image is refused without one. It looks at the first 16 bytes alone and compares them with fixed
// signatures; everything that reads further into an image is the helper's (ImagePipeVips).
import Foundation

/// What a source's first bytes say it is, and whether a file is taken as an image.
///
/// Every job goes through ``skipReason(head:)`` in the FileHandler's inspection, as soon as the
/// source's first bytes are read: files of a batch, deliveries to a queue directory, paths and
/// objects queued in PostgreSQL, objects in S3 or Supabase. The bytes decide, never the name: object
/// keys and upload IDs (`3f2a9c1e`, `upload.dat`) often say nothing or the wrong thing, and the
/// first 16 bytes cost nothing next to a decode (sharp and imgproxy sniff magic bytes the same way).
/// A file named `x.jpg` that holds text is no image either, and ends as `notes.txt` does: one fate
/// for the same bytes, in a batch and in both queues, whatever the producer called them.
public enum ImageSignature {
    /// How many bytes from the start of a file the signatures look at.
    public static let headLength = 16

    /// The extensions of the formats imagepipe reads (lowercase, without the dot). They never decide
    /// whether a file is read as an image; they keep a stored original's own extension (a `.jpeg`
    /// stays one), and before anything is read they tell which files claim keys first.
    public static let imageExtensions: Set<String> = [
        "jpg", "jpeg", "jpe", "jfif", "png", "webp", "tif", "tiff", "gif", "heic", "heif", "hif", "avif",
    ]

    /// `jpg`, `png`, `gif`, `webp`, `tif`, `heic` or `avif` from a file's first ``headLength``
    /// bytes (more are ignored); nil when they are no signature of a format imagepipe reads.
    package static func fileExtension(of bytes: some Collection<UInt8>) -> String? {
        let bytes = Array(bytes.prefix(headLength))
        func starts(_ prefix: [UInt8], at offset: Int = 0) -> Bool {
            bytes.count >= offset + prefix.count && Array(bytes[offset..<(offset + prefix.count)]) == prefix
        }
        if starts([0xFF, 0xD8, 0xFF]) { return "jpg" }
        if starts([0x89, 0x50, 0x4E, 0x47]) { return "png" }
        if starts(Array("GIF8".utf8)) { return "gif" }
        if starts(Array("RIFF".utf8)), starts(Array("WEBP".utf8), at: 8) { return "webp" }
        // Classic TIFF and BigTIFF (which libtiff reads too), in both byte orders.
        if starts([0x49, 0x49, 0x2A, 0x00]) || starts([0x4D, 0x4D, 0x00, 0x2A]) { return "tif" }
        if starts([0x49, 0x49, 0x2B, 0x00]) || starts([0x4D, 0x4D, 0x00, 0x2B]) { return "tif" }
        if starts(Array("ftyp".utf8), at: 4) {
            let brand = String(decoding: bytes[8..<min(12, bytes.count)], as: UTF8.self)
            if brand.hasPrefix("avi") { return "avif" }
            // The HEIF brands libvips 8.14's loader recognises (its list of ftyp brands).
            if ["heic", "heix", "hevc", "hevx", "mif1", "msf1", "heim", "heis", "hevm", "hevs"].contains(brand) { return "heic" }
        }
        return nil
    }

    /// Whether the name's extension is one of ``imageExtensions`` (of its last path component).
    public static func nameSaysImage(_ name: String) -> Bool {
        let last = name.split(separator: "/").last ?? Substring(name)
        guard let dot = last.lastIndex(of: "."), dot != last.startIndex else { return false }
        return imageExtensions.contains(last[last.index(after: dot)...].lowercased())
    }

    /// Why a source is skipped as `not_an_image`, or nil when it is taken (and decoded): taken when
    /// its first bytes are an image's signature, whatever it is called.
    ///
    /// - Parameter head: the file's first bytes (at least ``headLength`` when it has that many;
    ///   empty for an empty file).
    public static func skipReason(head: some Collection<UInt8>) -> String? {
        if fileExtension(of: head) != nil { return nil }
        // The reason follows the code wherever both are shown (`not_an_image: its first bytes ...`),
        // so it does not say "not an image" again.
        return head.isEmpty
            ? "an empty file (0 bytes)"
            : "its first bytes match no format imagepipe reads (\(SourceFormat.acceptedList))"
    }
}
