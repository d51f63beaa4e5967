// A variant's encoder settings beyond its quality: progressive JPEG, 4:4:4 chroma, effort, WebP's own modes.

/// Encoder settings of one variant, written after the quality in a spec (`progressive`, `444`,
/// `effort=N`, `smart_subsample`, `lossless`).
///
/// A setting left out takes the format's default (see ``defaultEffort(for:)`` and ``isProgressive(for:)``);
/// only settings written in the spec appear in ``VariantSpec/specString``, the fingerprint stored with
/// every output, so writing one makes the variant's outputs again and leaving the spec alone does not.
public struct EncoderOptions: Sendable, Hashable, Codable {
    /// JPEG: progressive scans (`progressive`) or one baseline scan (`baseline`); nil for the default,
    /// which depends on the output's size (see ``isProgressive(for:)``).
    public var progressive: Bool?
    /// JPEG and AVIF: chroma at full resolution (`444`) instead of 4:2:0; for text, line art and
    /// saturated red edges, at about a third more bytes.
    public var fullChroma: Bool
    /// WebP 0–6, AVIF 0–9 or JPEG XL 3–9 (`effort=N`): time spent looking for smaller output; nil for the default.
    public var effort: Int?
    /// WebP: sharper 4:2:0 chroma at colour edges (`smart_subsample`), slower to encode.
    public var smartSubsample: Bool
    /// WebP and JPEG XL: lossless (`lossless`), for graphics; WebP's quality then sets compression effort.
    public var lossless: Bool

    /// The defaults: nothing written in the spec.
    public init(
        progressive: Bool? = nil, fullChroma: Bool = false, effort: Int? = nil, smartSubsample: Bool = false,
        lossless: Bool = false
    ) {
        self.progressive = progressive
        self.fullChroma = fullChroma
        self.effort = effort
        self.smartSubsample = smartSubsample
        self.lossless = lossless
    }

    /// The effort a format gets when the spec names none (its ``FormatTraits/defaultEffort``): WebP 4
    /// (libwebp's default; effort 6 saved 4.6% for 1.7x the time), AVIF 2 (4.7% smaller than effort 0
    /// for 1.9x its time, where effort 4 took 4.5x effort 2's time for no smaller file at the same
    /// quality: more than a queue can give a web image; README, "Encoder options"), JPEG XL 5. Nil for
    /// formats without one.
    public static func defaultEffort(for format: OutputFormat) -> Int? { format.traits.defaultEffort }

    /// The effort to encode with.
    public func effort(for format: OutputFormat) -> Int { effort ?? Self.defaultEffort(for: format) ?? 0 }

    /// The longer side from which a JPEG is progressive by default. Progressive scans measured 5.5%
    /// smaller than baseline on bench photos at 2048 px (both with optimised Huffman tables), but their
    /// extra headers outweigh that on small outputs: at quality 80, +11% at 100 px, +4.2% at 150 px,
    /// +1.4% at 200 px, -0.1% at 256 px, -3.2% at 1024 px, and baseline saved 15% of the CPU of a
    /// 150x100 image (README, "Encoder options").
    public static let progressiveFromSide = 256

    /// Whether a JPEG of `size` is written progressive: as the spec says, else from
    /// ``progressiveFromSide`` up.
    public func isProgressive(for size: PixelSize) -> Bool {
        progressive ?? (max(size.width, size.height) >= Self.progressiveFromSide)
    }

    /// The spec's option fields, in their written order.
    var fields: [String] {
        var fields: [String] = []
        if let progressive { fields.append(progressive ? "progressive" : "baseline") }
        if fullChroma { fields.append("444") }
        if smartSubsample { fields.append("smart_subsample") }
        if lossless { fields.append("lossless") }
        if let effort { fields.append("effort=\(effort)") }
        return fields
    }

    /// Reads one option field; false when the field is not an option at all.
    mutating func read(_ field: String, format: OutputFormat) throws(ImagePipeError) -> Bool {
        func only(_ option: FormatTraits.Option, _ written: String) throws(ImagePipeError) {
            guard format.traits.options.contains(option) else {
                throw .configuration("'\(written)' does not apply to \(format.rawValue)")
            }
        }
        switch field {
        case "progressive", "baseline":
            try only(.progressive, field)
            guard progressive == nil else { throw .configuration("'\(field)' is given twice or with its opposite") }
            progressive = field == "progressive"
        case "444":
            try only(.fullChroma, field)
            fullChroma = true
        case "smart_subsample":
            try only(.smartSubsample, field)
            smartSubsample = true
        case "lossless":
            try only(.lossless, field)
            lossless = true
        default:
            guard field.hasPrefix("effort=") else { return false }
            try only(.effort, "effort")
            let range = format.traits.effort ?? 0...0
            guard let value = Int(field.dropFirst("effort=".count)), range.contains(value) else {
                throw .configuration("\(format.rawValue) effort must be \(range.lowerBound) to \(range.upperBound)")
            }
            effort = value
        }
        return true
    }
}
