// `auto` quality: per image and variant, a quality whose SSIMULACRA 2 score meets the target, in few encodes.
import CVipsShim
import Foundation
import ImagePipe

extension VipsCompressor {
    /// A passing probe at most this many points above the aim ends the search. Wide, with the start
    /// and step below, so that most variants take one or two probes: on the bench corpus a probe of the
    /// large variant (encode, decode, sampled score) costs about four times its encode, and the bytes a
    /// narrower window saves did not pay for the probes it took (README, "Quality chosen per image").
    package static let autoTolerance = 12.0
    /// The search ends once the lowest passing and highest failing qualities are this close.
    static let autoResolution = 3
    /// The first probe is where the corpus's median photo scores this many points above the aim, so
    /// that most first probes pass (and end the search) rather than fail and need a second.
    static let autoStartHeadroom = 4.0
    /// A probe placed from one end by a slope aims this far above the aim: enough that a slope a
    /// little off still passes, far less than the window.
    static let autoStepMargin = 1.0
    /// Steps from one probe assume a slope this much steeper than the format's typical one: a
    /// shorter step that falls short costs one more probe, a longer one that overshoots into the
    /// highest qualities (where JPEG turns chroma subsampling off) costs many bytes.
    static let autoStepSlopeFactor = 1.25

    /// Encodes `source` at a quality whose score against it reaches `target`: one that passes by at most
    /// ``autoTolerance``, or the lowest that passes to within ``autoResolution`` steps, searching with
    /// ``QualitySearch``; the chosen probe's bytes are the output, so nothing is encoded twice.
    ///
    /// Probes are scored on sampled rows at the finest scales (``PerceptualScore/isSampled``), about 0.4
    /// of a full score's time at 2048 px; the search then aims ``PerceptualScore/sampledError``
    /// above the target, so that the output's full score still reaches it. The recorded score is that
    /// estimate, or with `--score` the output's full score.
    ///
    /// The source is held in memory first: it is a lazy resize of the intermediate, which every probe
    /// would otherwise compute again.
    func encodeChoosingQuality(
        _ lazy: VipsImageHandle, as variant: VariantSpec, target: Double, keepingMetadata: Bool = false
    ) throws(ImagePipeError) -> EncodedVariant {
        guard let memory = ipv_copy_memory(lazy.pointer) else { throw decodeError() }
        let source = VipsImageHandle(memory)
        let scorer = try PerceptualScore(reference: source, variant: variant, sampled: true)
        let aim = scorer.isSampled ? target + PerceptualScore.sampledError : target
        let search = QualitySearch(
            target: aim, start: VariantSpec.autoStart(for: variant.format, target: aim + Self.autoStartHeadroom),
            tolerance: Self.autoTolerance, resolution: Self.autoResolution,
            typicalSlope: VariantSpec.typicalSlope(for: variant.format) * Self.autoStepSlopeFactor, margin: Self.autoStepMargin)
        let outcome = try search.run { (quality: Int) throws(ImagePipeError) -> (score: Double, payload: Data) in
            let data = try encode(source, as: variant, quality: quality, keepingMetadata: keepingMetadata)
            return (try scorer.score(of: data, variant: variant), data)
        }
        var encoded = EncodedVariant(spec: variant, size: source.size, data: outcome.chosen.payload)
        encoded.encoding.quality = outcome.chosen.quality
        encoded.encoding.score = outcome.chosen.score
        if scorer.isSampled && configuration.scoreEveryVariant {
            // `--score` audits what each image got: the full score, not the estimate the search used.
            encoded.encoding.score = try PerceptualScore(reference: source, variant: variant).score(of: encoded.data, variant: variant)
        }
        encoded.encoding.encodes = outcome.probes
        return encoded
    }
}
