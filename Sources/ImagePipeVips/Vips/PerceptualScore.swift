// SSIMULACRA 2 scores of encodes against the unencoded image they were made from, in process.
import CVipsShim
package import Foundation
package import ImagePipe

/// Scores encodes of one image: SSIMULACRA 2 in plain C loops (`ssimulacra2.c` in CVipsShim), with
/// the reference's scales and moments computed once for every encode scored against it.
///
/// SSIMULACRA 2 rather than butteraugli: libjxl's butteraugli API took 1.0 s per encode at 2048x1152
/// and cannot keep the reference, where this takes about 0.15 s per encode; and the targets people
/// know (the issue's, the metric authors' scale) are SSIMULACRA 2 scores. It agrees with the
/// `ssimulacra2` reference package within 2 points per image on the bench corpus (README, "Quality
/// chosen per image").
package final class PerceptualScore {
    /// Memory the scoring holds per pixel of the variant: the variant itself and a decoded encode, the
    /// reference's XYB and blurred moments (9 floats, plus a third for the smaller scales), and the
    /// scratch every score reuses: the encode's linear rows, XYB and three blurred planes at the
    /// largest scale scored (9 floats at most) and its half size (3 floats a quarter of the pixels).
    static let bytesPerPixel = 96

    /// Rows sampled at the two finest scales when ``init(reference:variant:sampled:)`` asks for it: a
    /// quarter at full size, half at half size. Those scales hold 15/16 of the pixels; the coarser
    /// ones, where whole-image banding shows, are always scored whole.
    static let sampling: Int32 = 4

    /// The most a sampled score may lie above the full one, in points: on the bench corpus (JPEG at
    /// 2048 px, qualities 52–76, 105 encodes) sampled scores stayed within +0.39 and −0.29 of the full
    /// ones. `auto` adds it to the target when it searches on sampled scores, so that the output's full
    /// score still reaches the target.
    package static let sampledError = 0.5

    private let reference: OpaquePointer

    /// Whether scores are estimated from sampled rows: asked for, and the image has 1024 rows or
    /// more and 256 pixels or more on its shorter side (six scales).
    package let isSampled: Bool

    /// Prepares `reference`, the unencoded image as the encoder receives it. With `sampled`, images of
    /// 1024 rows or more are scored on sampled rows at the two finest scales (a score takes about 0.4x
    /// the time of a full one at 2048 px); smaller ones, whose full score costs less than their encode,
    /// on every pixel.
    package init(reference: VipsImageHandle, variant: VariantSpec, sampled: Bool = false) throws(ImagePipeError) {
        let sampling: Int32 = sampled ? Self.sampling : 1
        guard let prepared = ipv_score_reference_new(reference.pointer, sampling) else {
            throw ImagePipeError(.encodeFailed, "cannot score variant \(variant.name): \(Vips.takeError() ?? "the image is under 8x8")")
        }
        self.reference = prepared
        isSampled = ipv_score_reference_is_sampled(prepared) != 0
    }

    deinit { ipv_score_reference_free(reference) }

    /// The score of an encode of the reference: 100 for identical pixels, 90 visually lossless, 70 high
    /// quality, 50 medium. The encode is decoded into a buffer the scorer keeps for the next one.
    package func score(of encoded: Data, variant: VariantSpec) throws(ImagePipeError) -> Double {
        var score = 0.0
        let status = encoded.withUnsafeBytes { ipv_score_encoded(reference, $0.baseAddress, $0.count, &score) }
        guard status == 0 else {
            throw ImagePipeError(.encodeFailed, "cannot score variant \(variant.name): \(Vips.takeError() ?? "decoder failed")")
        }
        return score
    }

    /// The score of an image already decoded, by the general path (any bands, flattened and converted
    /// as needed) that ``score(of:variant:)`` skips for 8-bit RGB encodes of the reference's size.
    package func score(ofDecoded image: VipsImageHandle, variant: VariantSpec) throws(ImagePipeError) -> Double {
        var score = 0.0
        guard ipv_score(reference, image.pointer, &score) == 0 else {
            throw ImagePipeError(.encodeFailed, "cannot score variant \(variant.name): \(Vips.takeError() ?? "unknown error")")
        }
        return score
    }
}
