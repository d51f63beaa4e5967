// The placeholder and facts of an original, from the decode the variants are made from.
import CLibVips
import CVipsShim
import Foundation
import ImagePipe

extension VipsCompressor {
    /// The placeholder and the facts ``Configuration/facts`` asks for, of a decode held in memory
    /// (nil: the decode of an animation's moving variants alone, whose first frame is read instead).
    ///
    /// `image` is the whole picture the facts are made from; `shown` the decode the variants are
    /// made from, which the placeholder shows (the same image but for a single cropped variant's).
    func analyse(
        _ image: VipsImageHandle?, placeholderFrom shown: VipsImageHandle?, source: SourceImage, start: Data, xmp: Data?
    ) -> (
        Placeholder?, ImageFacts?
    ) {
        let picture = Self.picture(of: image)
        let placeholderPicture = shown?.pointer == image?.pointer ? nil : Self.picture(of: shown)
        return analyse(picture, placeholderFrom: placeholderPicture, source: source, start: start, xmp: xmp)
    }

    /// The interleaved 8-bit pixels of a decode held in memory; nil for any other layout.
    private static func picture(of image: VipsImageHandle?) -> AnalysisContext.Picture? {
        guard let pointer = image?.pointer, pointer.pointee.BandFmt == VIPS_FORMAT_UCHAR, let data = vips_image_get_data(pointer) else {
            return nil
        }
        return AnalysisContext.Picture(
            pixels: data.assumingMemoryBound(to: UInt8.self), width: Int(pointer.pointee.Xsize), height: Int(pointer.pointee.Ysize),
            bands: Int(pointer.pointee.Bands))
    }

    /// The same from pixels already in hand (the direct JPEG path's decode); the placeholder from
    /// `shown` when it is another picture than `picture`.
    func analyse(
        _ picture: AnalysisContext.Picture?, placeholderFrom shown: AnalysisContext.Picture? = nil, source: SourceImage, start: Data, xmp: Data?
    ) -> (Placeholder?, ImageFacts?) {
        // A picture of any other band count makes no placeholder and no pixel facts.
        func usable(_ picture: AnalysisContext.Picture?) -> AnalysisContext.Picture? {
            picture.flatMap { [3, 4].contains($0.bands) && $0.width > 0 && $0.height > 0 ? $0 : nil }
        }
        var context = AnalysisContext(picture: usable(picture), shown: usable(shown), source: source, start: start, xmp: xmp)
        ImageAnalysis.runAll(configuration.facts, on: &context)
        return (context.placeholder, configuration.facts.isEmpty ? nil : context.facts)
    }

    /// The XMP packet libvips' loader attached to `header`, when the provenance is asked for.
    func xmpForFacts(_ header: VipsImageHandle, metadata: SourceMetadata?) -> Data? {
        guard configuration.facts.contains(.provenance) else { return nil }
        if let metadata { return metadata.xmp }
        var length = 0
        guard let bytes = ipv_get_blob(header.pointer, "xmp-data", &length), length > 0 else { return nil }
        return Data(bytes: bytes, count: length)
    }

    /// Whether the analyses may read the one decode: the whole picture (``decodeOnce`` decodes a
    /// single `cover` variant uncropped when facts read pixels), of at least ``analysedSide`` pixels
    /// on its long side or the original's own size.
    static func analysesMayRead(_ decoded: VipsImageHandle, displayed: PixelSize) -> Bool {
        let size = decoded.size
        return max(size.width, size.height) >= min(analysedSide, max(displayed.width, displayed.height))
    }

    /// The least long side the facts are made from: a 320 px `cover` thumbnail's decode (480x320
    /// for a 3:2 photo) keeps its PDQ hash within 16 bits of the reference's; a 64 px icon's does
    /// not, and gets a decode of its own (``decodeForAnalyses(_:header:whole:displayed:refusingWarnings:)``).
    static let analysedSide = 320

    /// A decode of the whole picture for the analyses alone, at most ``PDQ/workingSide`` pixels on
    /// its long side, when the one decode is too small for them (``analysesMayRead(_:displayed:)``):
    /// variants all smaller than ``analysedSide``. The source is opened
    /// anew, as the header's loader served the first decode; shrink-on-load keeps it cheap. Not
    /// counted in the working memory: at most 640x640 pixels, held while the analyses run.
    func decodeForAnalyses(
        _ source: SourceImage, header: VipsImageHandle, whole: VipsImageHandle?, displayed: PixelSize, refusingWarnings: Bool
    ) throws(ImagePipeError) -> VipsImageHandle {
        let side = PDQ.workingSide, longest = max(displayed.width, displayed.height)
        let size =
            longest <= side
            ? displayed : PixelSize(width: max(1, displayed.width * side / longest), height: max(1, displayed.height * side / longest))
        let image = try decode(
            source, header: header, whole: whole, to: size, byWidth: displayed.width >= displayed.height, crop: false,
            refusingWarnings: refusingWarnings, reopening: true)
        guard let memory = ipv_copy_memory(image.pointer) else { throw decodeError() }
        return VipsImageHandle(memory)
    }
}
