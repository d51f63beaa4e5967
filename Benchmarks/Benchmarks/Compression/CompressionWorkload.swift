// The compression hot path as named workloads the benchmark suite measures.
import Foundation
import ImagePipe
import ImagePipeVips

/// One measurable piece of compression work on a source image.
///
/// The benchmark suite runs these on real photos.
enum CompressionWorkload: String, CaseIterable, Sendable {
    /// The `web` preset decoded once at 2048 and every variant derived from it (what imagepipe does).
    case decodeOnceWebPreset = "decode-once web preset"
    /// The `web` preset with an independent decode per variant (what three vipsthumbnail runs do).
    case independentDecodesWebPreset = "independent decodes web preset"
    /// One 1600-pixel JPEG variant.
    case jpeg1600 = "jpeg 1600"
    /// The same as baseline JPEG, the default before progressive: what progressive costs.
    case jpeg1600Baseline = "jpeg 1600 baseline"
    /// One 1600-pixel WebP variant.
    case webp1600 = "webp 1600"
    /// One 1600-pixel AVIF variant.
    case avif1600 = "avif 1600"
    /// One 1600-pixel PNG variant.
    case png1600 = "png 1600"
    /// A 320x320 centre crop, the smallest useful output.
    case thumbnail320 = "thumbnail 320 cover"

    /// The variants the workload makes.
    var variants: [VariantSpec] {
        switch self {
        case .decodeOnceWebPreset, .independentDecodesWebPreset: Preset.web
        case .jpeg1600: [VariantSpec(name: "photo", width: 1600, height: 1600, format: .jpeg, quality: 80)]
        case .jpeg1600Baseline:
            [VariantSpec(name: "photo", width: 1600, height: 1600, format: .jpeg, quality: 80, options: EncoderOptions(progressive: false))]
        case .webp1600: [VariantSpec(name: "photo", width: 1600, height: 1600, format: .webp, quality: 78)]
        case .avif1600: [VariantSpec(name: "photo", width: 1600, height: 1600, format: .avif, quality: 60)]
        case .png1600: [VariantSpec(name: "photo", width: 1600, height: 1600, format: .png, quality: 100)]
        case .thumbnail320: [Preset.web[2]]
        }
    }

    /// Runs the workload once on `source` and returns the encoded outputs (their total size in bytes
    /// is a cheap check that work was done).
    func run(_ source: Data, compressor: VipsCompressor, limits: CompressionLimits = .default) throws(ImagePipeError) -> [EncodedVariant] {
        let image = SourceImage(name: rawValue, content: .bytes(source))
        switch self {
        case .independentDecodesWebPreset:
            var outputs: [EncodedVariant] = []
            for variant in variants {
                outputs += try compressor.compress(image, variants: [variant], limits: limits).variants
            }
            return outputs
        default:
            return try compressor.compress(image, variants: variants, limits: limits).variants
        }
    }
}
