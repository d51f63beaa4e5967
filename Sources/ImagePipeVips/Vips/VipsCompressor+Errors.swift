// The compressor's errors, each with its stable code and the reason libvips gave.
import Foundation
import ImagePipe

extension VipsCompressor {
    /// Why the header could not be opened: a format libvips does not know or blocks, or damage.
    func headerError() -> ImagePipeError {
        let text = Vips.takeError() ?? "unknown error"
        // Checked first: when another image is refused at the same moment, its "blocked" line can
        // join this one's text (libvips has one error buffer), and the reverse mix-up still gives
        // the right code.
        if text.contains("not in a known format") || text.contains("is not a known file format") {
            return ImagePipeError(.unsupportedFormat, "not a recognised image format")
        }
        if let blocked = text.range(of: ": operation is blocked") {
            let loader = text[..<blocked.lowerBound].split(separator: " ").last.map(String.init) ?? "untrusted"
            let format = loader.replacingOccurrences(of: "_buffer", with: "").replacingOccurrences(of: "_source", with: "")
                .replacingOccurrences(of: "load", with: "").uppercased()
            return ImagePipeError(.unsupportedFormat, "refused: \(format) input is blocked (its libvips loader is not safe for untrusted files)")
        }
        return ImagePipeError(.corruptImage, "cannot read image header: \(text)")
    }

    /// Damaged or cut-short data, found while decoding (or while encoding, which pulls the decode).
    func decodeError() -> ImagePipeError {
        ImagePipeError(.corruptImage, "corrupt or truncated image data: \(Vips.takeError() ?? "decoder failed")")
    }

    /// An encoder that refused a variant.
    func encodeError(_ variant: VariantSpec) -> ImagePipeError {
        ImagePipeError(.encodeFailed, "cannot encode variant \(variant.name) as \(variant.format.rawValue): \(Vips.takeError() ?? "encoder failed")")
    }

    /// Pixels as megapixels with one decimal, as limits are reported.
    static func megapixels(_ pixels: Int) -> String {
        String(format: "%.1f", Double(pixels) / 1e6)
    }
}
