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

    // MARK: - The header steps, shared with compress(_:variants:limits:memory:)

    /// Opens the source without decoding pixels; `refusingWarnings` as for ``makeVariants``.
    func openHeader(_ source: SourceImage, refusingWarnings: Bool) throws(ImagePipeError) -> VipsImageHandle {
        let pointer: UnsafeMutablePointer<VipsImage>?
        switch source.content {
        case .bytes(let data):
            guard !data.isEmpty else { throw ImagePipeError(.emptyFile, "0 bytes to read") }
            pointer = data.withUnsafeBytes { ipv_header_buffer($0.baseAddress, $0.count, refusingWarnings ? 1 : 0) }
        case .file(let opened):
            pointer = ipv_header_descriptor(opened.descriptor, refusingWarnings ? 1 : 0)
        }
        guard let pointer else { throw headerError() }
        return VipsImageHandle(pointer)
    }

    /// Refuses a source libvips could read only with a loader imagepipe keeps for its own outputs:
    /// JPEG XL (a bare codestream, or the ISO container), whose loader is unblocked so that `auto`
    /// can score JPEG XL variants. Refused by its first bytes before any header is opened (from the
    /// start ``compress(_:variants:limits:memory:)`` reads anyway, and in ``readHeader``), libjxl
    /// never parses a stranger's.
    static func refuseUnreadFormats(_ head: some Collection<UInt8>) throws(ImagePipeError) {
        let codestream: [UInt8] = [0xFF, 0x0A]
        let container: [UInt8] = [0, 0, 0, 0x0C, 0x4A, 0x58, 0x4C, 0x20, 0x0D, 0x0A, 0x87, 0x0A]
        guard head.starts(with: codestream) || head.starts(with: container) else { return }
        throw ImagePipeError(
            .unsupportedFormat, "unsupported image format 'jxl': JPEG XL sources are not read; accepted: \(SourceFormat.acceptedList)")
    }

    /// The source format, if its loader is on the allowlist.
    package static func acceptedFormat(of header: VipsImageHandle) throws(ImagePipeError) -> SourceFormat {
        let loader = header.string("vips-loader") ?? "unknown"
        let base = loader.replacingOccurrences(of: "_buffer", with: "").replacingOccurrences(of: "_source", with: "")
        guard let format = Self.acceptedLoaders[base] else {
            let name = base.hasSuffix("load") ? String(base.dropLast(4)) : base
            throw ImagePipeError(.unsupportedFormat, "unsupported image format '\(name)'; accepted: \(SourceFormat.acceptedList)")
        }
        if format == .heif {
            switch header.string("heif-compression") {
            case "av1": return .avif
            case "hevc": return .heic
            default: return .heif
            }
        }
        return format
    }

    /// Refuses a source whose declared size is over the pixel limit, before any pixel is decoded.
    static func checkPixels(_ header: VipsImageHandle, _ limits: CompressionLimits) throws(ImagePipeError) {
        let stored = header.size
        guard stored.area <= limits.maxPixels else {
            throw ImagePipeError(
                .imageTooLarge,
                "image is \(stored) (\(megapixels(stored.area)) megapixels), "
                    + "over the limit of \(megapixels(limits.maxPixels)) megapixels (--max-pixels)")
        }
    }
}
