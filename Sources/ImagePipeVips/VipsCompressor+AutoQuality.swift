// `auto` quality: per image and variant, the lowest quality whose SSIMULACRA 2 score meets the target.
import CVipsShim
import Foundation
import ImagePipe

extension VipsCompressor {
    /// A passing probe at most this many points above the aim ends the search. Wider than
    /// ``QualitySearch``'s default: on the bench corpus it took the `web-auto` encodes per image from
    /// 2.90, 3.10 and 3.38 to 2.24, 2.76 and 2.52 (large, medium, thumb) for 1.2 points of the bytes
    /// saved (−30.4% to −29.2%): a probe of the large variant (encode, decode, sampled score) costs about
    /// four times its encode.
    static let autoTolerance = 2.0
    /// The search ends once the lowest passing and highest failing qualities are this close.
    static let autoResolution = 3

    /// Encodes `source` at the lowest quality whose score against it reaches `target`, searching with
    /// ``QualitySearch``; the chosen probe's bytes are the output, so nothing is encoded twice.
    ///
    /// Probes are scored on sampled rows at the finest scales (``PerceptualScore/isSampled``), about 0.4
    /// of a full score's time at 2048 px; the search then aims ``PerceptualScore/sampledError``
    /// above the target, so that the output's full score still reaches it. The recorded score is that
    /// estimate, or with `--score` the output's full score.
    ///
    /// The source is held in memory first: it is a lazy resize of the intermediate, which every probe
    /// would otherwise compute again.
    func encodeChoosingQuality(_ lazy: VipsImageHandle, as variant: VariantSpec, target: Double) throws(ImagePipeError) -> EncodedVariant {
        guard let memory = vips_image_copy_memory(lazy.pointer) else { throw decodeError() }
        let source = VipsImageHandle(memory)
        let scorer = try PerceptualScore(reference: source, variant: variant, sampled: true)
        let aim = scorer.isSampled ? target + PerceptualScore.sampledError : target
        let search = QualitySearch(
            target: aim, start: variant.quality, tolerance: Self.autoTolerance, resolution: Self.autoResolution,
            typicalSlope: VariantSpec.typicalSlope(for: variant.format))
        let outcome = try search.run { (quality: Int) throws(ImagePipeError) -> (score: Double, payload: Data) in
            let data = try encode(source, as: variant, quality: quality)
            return (try scorer.score(of: data, variant: variant), data)
        }
        var encoded = EncodedVariant(spec: variant, size: source.size, data: outcome.chosen.payload)
        encoded.quality = outcome.chosen.quality
        encoded.score = outcome.chosen.score
        if scorer.isSampled && configuration.scoreEveryVariant {
            // `--score` audits what each image got: the full score, not the estimate the search used.
            encoded.score = try PerceptualScore(reference: source, variant: variant).score(of: encoded.data, variant: variant)
        }
        encoded.encodes = outcome.probes
        return encoded
    }
}
