// Fuzz targets for what imagepipe reads of image files without libvips: their ends, and a JPEG's segments.
import Foundation
import ImagePipe

enum ImageTargets {
    /// `--dry-run`'s walk to a JPEG's, PNG's or WebP's end, and the stripping of a kept original:
    /// both end, and a stripped JPEG is one that walk reads to its own end and strips to itself.
    static func imageEnd(_ data: Data) {
        for format in [SourceFormat.jpeg, .png, .webp] { _ = ImageEnd.missing(in: .bytes(data), format: format) }
        let end = ImageEnd.endOfJPEG(data)
        if let end { require(end >= 4 && end <= data.count, "an end at \(end) of \(data.count) bytes") }
        guard let stripped = JPEGOriginal.stripped(data, isSRGB: { _ in true }) else { return }
        require(end != nil, "stripped a JPEG the walk finds no end of")
        require(ImageEnd.endOfJPEG(stripped) == stripped.count, "the stripped JPEG does not end at its end-of-image marker")
        require(JPEGOriginal.stripped(stripped, isSRGB: { _ in true }) == stripped, "stripping twice changes the file")
    }
}
