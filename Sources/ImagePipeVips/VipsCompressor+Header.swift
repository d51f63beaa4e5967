// The header alone, read as a compression would read it: what `--dry-run` checks without decoding.
import CVipsShim
import Foundation
public import ImagePipe

extension VipsCompressor {
    /// The same header steps as ``compress(_:variants:limits:memory:)`` (open without decoding,
    /// the format allowlist, the pixel limit, an animation's frame budget when some variant would
    /// decode every frame), with the same errors, and nothing after them.
    public func readHeader(_ source: SourceImage, variants: [VariantSpec], limits: CompressionLimits) throws(ImagePipeError) -> SourceHeader? {
        defer { ipv_thread_done() }
        ipv_begin_call()
        try Self.refuseUnreadFormats(Self.head(of: source))
        let header = try openHeader(source, refusingWarnings: false)
        let format = try Self.acceptedFormat(of: header)
        try Self.checkPixels(header, limits)
        let frames = Self.frameCount(of: header)
        if frames > 1, variants.contains(where: { $0.animates(focus: source.focus) }) {
            try Self.checkFrames(header, frames: frames, limits)
        }
        return SourceHeader(format: format, size: Self.displayedSize(of: header))
    }

    /// A source's first 12 bytes (fewer when it is shorter or cannot be read: its header then says why).
    static func head(of source: SourceImage) -> Data {
        switch source.content {
        case .bytes(let data): data.prefix(12)
        case .file(let opened): (try? opened.read(count: min(opened.byteCount, 12))) ?? Data()
        }
    }

    /// The size as displayed: width and height swapped when the EXIF orientation turns the image.
    package static func displayedSize(of header: VipsImageHandle) -> PixelSize {
        let stored = header.size
        return ipv_orientation_swaps(header.pointer) != 0 ? PixelSize(width: stored.height, height: stored.width) : stored
    }
}
