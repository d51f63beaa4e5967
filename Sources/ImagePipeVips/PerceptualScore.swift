// SSIMULACRA 2 scores of encodes against the unencoded image they were made from, in process.
import CVipsShim
package import Foundation
package import ImagePipe

/// Scores encodes of one image: SSIMULACRA 2 on libvips operations (`ssimulacra2.c` in CVipsShim),
/// with the reference's scales and moments computed once for every encode scored against it.
///
/// SSIMULACRA 2 rather than butteraugli: on 2048x1152 the C implementation takes about 0.5 s for
/// the reference once and 0.7 s per encode, where libjxl's butteraugli API took 1.0 s per encode and
/// cannot keep the reference; and the targets people know (the issue's, the metric authors' scale)
/// are SSIMULACRA 2 scores. It agrees with the `ssimulacra2` reference package within 2 points per
/// image on the bench corpus (README, "Quality chosen per image").
package final class PerceptualScore {
    /// Memory the scoring holds per pixel of the variant: the variant itself, the reference's XYB and
    /// blurred moments at every scale (9 floats, plus a third for the smaller scales), a decoded encode,
    /// and the encode's XYB plane and half-size linear plane while one scale is reduced.
    static let bytesPerPixel = 72

    private let reference: OpaquePointer

    /// Prepares `reference`, the unencoded image as the encoder receives it.
    package init(reference: VipsImageHandle, variant: VariantSpec) throws(ImagePipeError) {
        guard let prepared = ipv_score_reference_new(reference.pointer) else {
            throw ImagePipeError(.encodeFailed, "cannot score variant \(variant.name): \(Vips.takeError() ?? "the image is under 8x8")")
        }
        self.reference = prepared
    }

    deinit { ipv_score_reference_free(reference) }

    /// The score of an encode of the reference: 100 for identical pixels, 90 visually lossless, 70 high
    /// quality, 50 medium.
    package func score(of encoded: Data, variant: VariantSpec) throws(ImagePipeError) -> Double {
        guard let pointer = encoded.withUnsafeBytes({ ipv_load_buffer($0.baseAddress, $0.count) }) else {
            throw ImagePipeError(.encodeFailed, "cannot read back variant \(variant.name) to score it: \(Vips.takeError() ?? "decoder failed")")
        }
        let decoded = VipsImageHandle(pointer)
        var score = 0.0
        guard ipv_score(reference, decoded.pointer, &score) == 0 else {
            throw ImagePipeError(.encodeFailed, "cannot score variant \(variant.name): \(Vips.takeError() ?? "unknown error")")
        }
        return score
    }
}
