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
        // The frame size read before decoding: only of a JPEG, and the same for a slice.
        let frame = JPEGOriginal.frameSize(data)
        if frame != nil { require(data.starts(with: [0xFF, 0xD8]), "a frame size of bytes that are no JPEG") }
        require(JPEGOriginal.frameSize((Data([0]) + data).dropFirst()) == frame, "a slice reads another frame size")
        guard let stripped = JPEGOriginal.stripped(data, isSRGB: { _ in true }) else { return }
        require(end != nil, "stripped a JPEG the walk finds no end of")
        require(ImageEnd.endOfJPEG(stripped) == stripped.count, "the stripped JPEG does not end at its end-of-image marker")
        require(JPEGOriginal.stripped(stripped, isSRGB: { _ in true }) == stripped, "stripping twice changes the file")
    }

    /// The frame count inspection reads from a GIF's or WebP's container to know which outputs
    /// move: it ends, is at least one, is one for a file that cannot be animated, and is the same
    /// for the bytes as a slice of a larger buffer.
    static func frameCount(_ data: Data) {
        let frames = FrameCount.of(data)
        require(frames >= 1 && frames <= max(1, data.count), "\(frames) frames in \(data.count) bytes")
        if !FrameCount.mayBeAnimated(data.prefix(16)) { require(frames == 1, "\(frames) frames in a file that cannot move") }
        let sliced = (Data([0x47]) + data).dropFirst()
        require(FrameCount.of(sliced) == frames, "a slice of the same bytes has \(FrameCount.of(sliced)) frames, not \(frames)")
    }

    /// The probe for an HDR gain map (``GainMap/kind(in:)``): it ends, names a JPEG kind only for
    /// bytes that start as a JPEG and a HEIF kind only for a HEIF, and answers the same for the
    /// bytes as a slice of a larger buffer.
    static func gainMap(_ data: Data) {
        let kind = GainMap.kind(in: data)
        switch kind {
        case .ultraHDRJPEG: require(data.starts(with: [0xFF, 0xD8]), "a JPEG gain map in bytes that are no JPEG")
        case .appleHEIC, .isoHEIF: require(data.count >= 12 && data.dropFirst(4).starts(with: Array("ftyp".utf8)), "a HEIF gain map in no HEIF")
        case nil: break
        }
        let sliced = (Data([0x00]) + data).dropFirst()
        require(GainMap.kind(in: sliced) == kind, "a slice of the same bytes says \(String(describing: GainMap.kind(in: sliced)))")
    }
}
