// Decodes encoded images to check them: size, bands, metadata, pixels, differences. For tests and tools.
import CLibVips
import CVipsProbeShim
import CVipsShim
public import Foundation
public import ImagePipe
import ImagePipeVips

/// Reads back encoded images through libvips, to verify outputs.
public enum VipsProbe {
    /// A decoded image's properties.
    public struct Info: Sendable, Equatable {
        /// Pixel width.
        public var width: Int
        /// Pixel height.
        public var height: Int
        /// Number of bands (3 for sRGB, 4 with alpha, 1 for grey).
        public var bands: Int
        /// Bits per band sample.
        public var bitsPerSample: Int
        /// libvips' interpretation, e.g. `srgb`, `b-w`, `cmyk`.
        public var interpretation: String
        /// The loader that read it, e.g. `jpegload_buffer`.
        public var loader: String
        /// Metadata fields present among EXIF, XMP, IPTC and ICC profile.
        public var metadata: [String]
    }

    /// A decoded image, released when dropped.
    public final class Image {
        fileprivate let handle: VipsImageHandle
        fileprivate init(_ handle: VipsImageHandle) { self.handle = handle }

        /// The size.
        public var size: PixelSize { handle.size }

        /// One pixel's band values.
        public func pixel(x: Int, y: Int) -> [Double] {
            var values = [Double](repeating: 0, count: 16)
            let count = ipv_pixel(handle.pointer, Int32(x), Int32(y), &values, 16)
            return count > 0 ? Array(values.prefix(Int(count))) : []
        }

        /// Every 8-bit sample, interleaved, with the band count; nil for other depths.
        public var samples: (bands: Int, bytes: [UInt8])? {
            let pointer = handle.pointer
            guard pointer.pointee.BandFmt == VIPS_FORMAT_UCHAR, let data = vips_image_get_data(pointer) else { return nil }
            let count = Int(pointer.pointee.Xsize) * Int(pointer.pointee.Ysize) * Int(pointer.pointee.Bands)
            return (Int(pointer.pointee.Bands), Array(UnsafeBufferPointer(start: data.assumingMemoryBound(to: UInt8.self), count: count)))
        }

        /// Mean absolute difference per sample against another image of the same size and bands.
        public func meanAbsoluteDifference(to other: Image) -> Double? {
            guard size == other.size, handle.pointer.pointee.Bands == other.handle.pointer.pointee.Bands else { return nil }
            let value = ipv_mean_abs_difference(handle.pointer, other.handle.pointer)
            return value < 0 ? nil : value
        }
    }

    /// Decodes `data` (first page) fully.
    public static func decode(_ data: Data) throws(ImagePipeError) -> Image {
        try Vips.ensureStarted()
        let pointer = data.withUnsafeBytes { ipv_decode_buffer($0.baseAddress, $0.count) }
        guard let pointer else {
            throw ImagePipeError(.corruptImage, "cannot decode: \(Vips.takeError() ?? "unknown error")")
        }
        return Image(VipsImageHandle(pointer))
    }

    /// The SSIMULACRA 2 score the compressor gives `distorted` (encoded) against `reference` (encoded
    /// losslessly, e.g. PNG), as `auto` computes it.
    public static func ssimulacra2(reference: Data, distorted: Data) throws(ImagePipeError) -> Double {
        let image = try decode(reference)
        let variant = VariantSpec(name: "probe", width: image.size.width, height: image.size.height, format: .png, quality: 100)
        return try PerceptualScore(reference: image.handle, variant: variant).score(of: distorted, variant: variant)
    }

    /// ``ssimulacra2(reference:distorted:)`` with `distorted` decoded first and scored by the general
    /// path, which the scorer skips for 8-bit RGB encodes (it decodes those into a buffer it keeps).
    public static func ssimulacra2(reference: Data, decodingFirst distorted: Data, sampled: Bool = false) throws(ImagePipeError) -> Double {
        let image = try decode(reference)
        let variant = VariantSpec(name: "probe", width: image.size.width, height: image.size.height, format: .png, quality: 100)
        let scorer = try PerceptualScore(reference: image.handle, variant: variant, sampled: sampled)
        return try scorer.score(ofDecoded: try decode(distorted).handle, variant: variant)
    }

    /// The score `auto` searches with: estimated from sampled rows at the finest scales when the image
    /// has enough rows (`sampled` true), else the full score.
    public static func sampledSSIMULACRA2(reference: Data, distorted: Data) throws(ImagePipeError) -> (score: Double, sampled: Bool) {
        let image = try decode(reference)
        let variant = VariantSpec(name: "probe", width: image.size.width, height: image.size.height, format: .png, quality: 100)
        let scorer = try PerceptualScore(reference: image.handle, variant: variant, sampled: true)
        return (try scorer.score(of: distorted, variant: variant), scorer.isSampled)
    }

    /// The error a sampled score may have (see ``sampledSSIMULACRA2(reference:distorted:)``), in points.
    public static var sampledScoreError: Double { PerceptualScore.sampledError }

    /// Leaves `count` lines in libvips' process-wide error buffer, as calls whose failure nobody
    /// reads do (libvips keeps at most 10 KB there).
    public static func leaveLibvipsErrors(_ count: Int) throws(ImagePipeError) {
        try Vips.ensureStarted()
        ipv_leave_errors(Int32(count))
    }

    /// The RGBA pixels (at most 100x100) the compressor makes an image's placeholder from.
    public static func placeholderPixels(_ data: Data) throws(ImagePipeError) -> (width: Int, height: Int, rgba: [UInt8]) {
        let image = try decode(data)
        guard let pixels = VipsCompressor.placeholderPixels(of: image.handle) else {
            throw ImagePipeError(.unsupportedFormat, "not 8-bit RGB or RGBA")
        }
        return pixels
    }

    /// A string or integer field of an encoded image's header, as libvips reads it (e.g.
    /// `jpeg-chroma-subsample`, `interlaced`), or nil.
    public static func header(_ data: Data, _ name: String) throws(ImagePipeError) -> String? {
        let image = try decode(data)
        return image.handle.string(name) ?? image.handle.int(name).map(String.init)
    }

    /// The working memory the compressor reserves from its decode budget for `data` and `variants`.
    public static func workingMemory(_ data: Data, variants: [VariantSpec]) throws(ImagePipeError) -> Int {
        try Vips.ensureStarted()
        let pointer = data.withUnsafeBytes { ipv_header_buffer($0.baseAddress, $0.count, 0) }
        guard let pointer else { throw ImagePipeError(.unsupportedFormat, Vips.takeError() ?? "unreadable header") }
        let header = VipsImageHandle(pointer)
        return VipsCompressor.workingMemory(
            header, format: try VipsCompressor.acceptedFormat(of: header), variants: variants, sourceBytes: data.count, focus: nil)
    }

    /// The size libvips' own thumbnail makes of an image of `size` asked for `box` (shrinking only;
    /// `crop`: cover, centred). The image is black and never computed: only its size matters.
    public static func thumbnailSize(of size: PixelSize, box: (width: Int32, height: Int32), crop: Bool) throws(ImagePipeError) -> PixelSize {
        try Vips.ensureStarted()
        var width: Int32 = 0, height: Int32 = 0
        guard ipv_thumbnail_size(Int32(size.width), Int32(size.height), box.width, box.height, crop ? 1 : 0, &width, &height) == 0 else {
            throw ImagePipeError(.corruptImage, Vips.takeError() ?? "thumbnail failed")
        }
        return PixelSize(width: Int(width), height: Int(height))
    }

    /// A black JPEG of `size`.
    public static func blackJPEG(_ size: PixelSize) throws(ImagePipeError) -> Data {
        try Vips.ensureStarted()
        var buffer: UnsafeMutableRawPointer?
        var length = 0
        guard ipv_black_jpeg(Int32(size.width), Int32(size.height), &buffer, &length) == 0, let buffer else {
            throw ImagePipeError(.encodeFailed, Vips.takeError() ?? "jpegsave failed")
        }
        defer { g_free(buffer) }
        return Data(bytes: buffer, count: length)
    }

    /// What the compressor asks libvips for to make `target` (the limiting side, or the box for a crop).
    public static func compressorBox(for target: PixelSize, byWidth: Bool, crop: Bool) -> (width: Int32, height: Int32) {
        VipsCompressor.box(for: target, byWidth: byWidth, crop: crop)
    }

    /// Decodes `data` and describes it.
    public static func info(_ data: Data) throws(ImagePipeError) -> Info {
        let image = try decode(data)
        let pointer = image.handle.pointer
        let interpretation =
            vips_enum_nick(vips_interpretation_get_type(), Int32(pointer.pointee.Type.rawValue))
            .map { String(cString: $0) } ?? "unknown"
        let names: [String] = ["exif-data", "xmp-data", "iptc-data", "icc-profile-data"]
        let fields = names.filter { ipv_has_field(pointer, $0) != 0 }
        return Info(
            width: Int(pointer.pointee.Xsize), height: Int(pointer.pointee.Ysize), bands: Int(pointer.pointee.Bands),
            bitsPerSample: Int(vips_format_sizeof(pointer.pointee.BandFmt)) * 8, interpretation: interpretation,
            loader: image.handle.string("vips-loader") ?? "unknown", metadata: fields)
    }
}
