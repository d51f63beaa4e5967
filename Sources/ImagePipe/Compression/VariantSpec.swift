// What one output variant is: a box, how the image fits it, a format and a quality.

/// How an image is fitted to a variant's box.
public enum Fit: String, Sendable, Codable {
    /// Scaled down to fit within the box, keeping its aspect ratio.
    case inside
    /// Scaled down to fill the box and cropped (around the centre unless the variant's
    /// ``CropPosition`` or the job's ``FocalPoint`` says where); the output has the box's aspect ratio.
    case cover
}

/// One output variant of every source, e.g. `large`: inside 2048x2048, JPEG quality 82.
public struct VariantSpec: Sendable, Hashable, Codable {
    /// The variant's name, used in keys as `{variant}`.
    public var name: String
    /// The box width in pixels; ``unbounded`` when only the height limits the image.
    public var width: Int
    /// The box height in pixels; ``unbounded`` when only the width limits the image.
    public var height: Int
    /// How the image fits the box.
    public var fit: Fit
    /// Which part a `cover` crop keeps; always ``CropPosition/centre`` for `inside`.
    public var crop: CropPosition
    /// The output encoding.
    public var format: OutputFormat
    /// Encoder quality, 1–100 (ignored by PNG, which is lossless); with ``autoTarget``, the quality at
    /// which the median photo of the bench corpus reaches the target (``autoStart(for:target:)``).
    public var quality: Int
    /// With `auto`: the SSIMULACRA 2 score each image's output must reach; a quality that reaches it
    /// (near the lowest that does) is chosen per image. Nil for a fixed quality.
    public var autoTarget: Double?
    /// Encoder settings beyond the quality.
    public var options: EncoderOptions
    /// What the variant's options say about the watermark (`nowatermark`, `watermark=FRACTION`).
    public var watermarkChoice: WatermarkChoice = .standard
    /// The logo laid over this variant, once the command's `--watermark` is applied
    /// (``applying(_:)``); nil for none.
    public var watermark: Watermark?
    /// Whether an animated source gives this variant its first frame only (`still`), even in a
    /// format that holds animation (see ``animates(focus:)``).
    public var still = false
    /// The metadata policy the spec names (`metadata=POLICY`); nil when it names none and the
    /// command's `--metadata` decides (``applying(metadata:)``).
    public var metadataChoice: MetadataPolicy?
    /// What the outputs keep of the source's metadata: the spec's choice, else the command's.
    public var metadata: MetadataPolicy = .strip
    /// The HDR policy the spec names (`hdr=keep|drop`); nil when the command's `--hdr` decides.
    public var hdrChoice: HDRPolicy?
    /// Whether the outputs of an HDR original carry its gain map (``carriesHDR``): the spec's
    /// choice, else the command's.
    public var hdr: HDRPolicy = .keep

    /// Creates a variant; see ``init(parsing:)`` for the command-line form. With `autoTarget`, the
    /// quality is chosen per image and `quality` is replaced by the format's starting point.
    public init(
        name: String, width: Int, height: Int, fit: Fit = .inside, crop: CropPosition = .centre, format: OutputFormat,
        quality: Int, autoTarget: Double? = nil, options: EncoderOptions = EncoderOptions()
    ) {
        self.name = name
        self.width = width
        self.height = height
        self.fit = fit
        self.crop = crop
        self.format = format
        self.quality = autoTarget.map { Self.autoStart(for: format, target: $0) } ?? quality
        self.autoTarget = autoTarget
        self.options = options
    }

    /// The box as a size.
    public var box: PixelSize { PixelSize(width: width, height: height) }

    /// The side of a box left open (`1600x`, `x1200`): larger than any image libvips accepts, so the
    /// other side alone decides the size, as with vipsthumbnail.
    public static let unbounded = 10_000_000

    /// The quality a PNG (or lossless WebP) variant gets when its spec names none.
    public static let pngQuality = 100

    /// The target of a bare `auto`: SSIMULACRA 2 at 70, "high quality" on its authors' scale (90 is
    /// visually lossless, 50 medium), about what JPEG q80 gives the median photo of the bench corpus.
    public static let defaultAutoTarget = 70.0

    /// Where the search for a quality starts: the quality at which the median photo of the bench
    /// corpus reaches `target`, from the fixed and `web-auto` runs (JPEG at 2048 px reached 67.5 at
    /// q61, WebP at 1024 px 59.5 at q51), moved by ``typicalSlope(for:)`` for other targets.
    public static func autoStart(for format: OutputFormat, target: Double) -> Int {
        let (quality, score) = format.traits.autoStart
        return min(95, max(10, Int((quality + (target - score) / typicalSlope(for: format)).rounded())))
    }

    /// Score points per quality step near the targets people use, measured on the bench corpus
    /// between the fixed and the chosen qualities.
    public static func typicalSlope(for format: OutputFormat) -> Double { format.traits.typicalSlope }
}

extension VariantSpec {
    /// Parses `NAME=WxH,FORMAT,QUALITY[,OPTION...]`, e.g. `photo=1600x1600,jpeg,q80,progressive`.
    ///
    /// Either side of the box may be left out (`1600x`, `x1200`) for a fit by the other side alone.
    /// QUALITY is `qN` (1–100), `auto` or `auto:TARGET` (a SSIMULACRA 2 score to reach, 1–100); it may
    /// be left out for PNG and lossless WebP only. The options, in any order: `cover` or `inside`, a
    /// ``CropPosition`` (with `cover` only), the ``EncoderOptions`` fields `progressive`, `baseline`, `444`, `effort=N`, `smart_subsample`, `lossless`,
    /// a ``WatermarkChoice`` (`nowatermark`, `watermark=FRACTION`), a ``MetadataPolicy`` (`metadata=POLICY`), an
    /// ``HDRPolicy`` (`hdr=keep|drop`), and `still` (an animated source's first frame only).
    public init(parsing text: String) throws(ImagePipeError) {
        func bad(_ why: String) -> ImagePipeError {
            .configuration("invalid --variant '\(text)': \(why) (expected NAME=WxH,FORMAT,QUALITY[,OPTION...])")
        }
        guard let equals = text.firstIndex(of: "=") else { throw bad("missing '='") }
        let name = String(text[..<equals])
        guard !name.isEmpty, name.utf8.count <= 64,
            name.unicodeScalars.allSatisfy({ $0.isASCIIAlphanumeric || $0 == "-" || $0 == "_" })
        else { throw bad("the name must be 1–64 letters, digits, '-' or '_'") }

        var fields = text[text.index(after: equals)...].split(separator: ",", omittingEmptySubsequences: false)
            .map { $0.trimmingCharacters(in: " ").lowercased() }
        guard fields.count >= 2 else { throw bad("wrong number of fields") }

        let dims = fields.removeFirst().split(separator: "x", omittingEmptySubsequences: false)
        guard dims.count == 2, !(dims[0].isEmpty && dims[1].isEmpty),
            let width = dims[0].isEmpty ? Self.unbounded : Int(dims[0]),
            let height = dims[1].isEmpty ? Self.unbounded : Int(dims[1]),
            dims[0].isEmpty || (1...100_000).contains(width), dims[1].isEmpty || (1...100_000).contains(height)
        else { throw bad("the size must be WxH, Wx or xH with sides between 1 and 100000") }

        let formatName = fields.removeFirst()
        guard let format = OutputFormat(name: formatName) else {
            throw bad("unknown format '\(formatName)'; use \(OutputFormat.names)")
        }

        var quality: Int?
        var autoTarget: Double?
        // A bare number where the quality goes is one without its q (sharp and libvips write `Q=82`,
        // other tools `82`): said as such, rather than as an unknown option.
        if let first = fields.first, !first.isEmpty, first.allSatisfy({ $0.isASCII && $0.isNumber }) {
            throw bad("write the quality as q\(first), not \(first)")
        }
        if let first = fields.first, first.hasPrefix("q") || first.hasPrefix("auto") {
            fields.removeFirst()
            if first.hasPrefix("q") {
                guard let parsed = Int(first.dropFirst()), (1...100).contains(parsed) else { throw bad("the quality must be q1 to q100") }
                quality = parsed
            } else {
                let target = first == "auto" ? Self.defaultAutoTarget : first.hasPrefix("auto:") ? Double(first.dropFirst(5)) : nil
                guard let target, target.isFinite, (1...100).contains(target) else {
                    throw bad("auto takes a SSIMULACRA 2 target from 1 to 100, as auto:70")
                }
                autoTarget = target
            }
        }

        var fit: Fit?
        var crop: CropPosition?
        var options = EncoderOptions()
        var watermarkChoice: WatermarkChoice?
        var still = false
        var metadataChoice: MetadataPolicy?
        var hdrChoice: HDRPolicy?
        var seen = Set<String>()
        for field in fields {
            let key =
                field.hasPrefix("effort=") ? "effort" : field.hasPrefix("metadata=") ? "metadata" : field.hasPrefix("hdr=") ? "hdr" : field
            if field.hasPrefix("hdr=") {
                guard seen.insert(key).inserted else { throw bad("'\(field)' is given twice") }
                do throws(ImagePipeError) {
                    hdrChoice = try HDRPolicy(name: String(field.dropFirst("hdr=".count)))
                } catch {
                    throw bad(error.reason)
                }
                continue
            }
            guard seen.insert(key).inserted else { throw bad("'\(field)' is given twice") }
            if field.hasPrefix("metadata=") {
                do throws(ImagePipeError) {
                    metadataChoice = try MetadataPolicy(name: String(field.dropFirst("metadata=".count)))
                } catch {
                    throw bad(error.reason)
                }
                continue
            }
            let choice: WatermarkChoice?
            do throws(ImagePipeError) {
                choice = try WatermarkChoice(option: field)
            } catch {
                throw bad(error.reason)
            }
            if let choice {
                guard watermarkChoice == nil else { throw bad("give one of 'nowatermark' and 'watermark=FRACTION'") }
                watermarkChoice = choice
                continue
            }
            if field == "still" {
                still = true
                continue
            }
            if let parsed = Fit(rawValue: field) {
                guard fit == nil else { throw bad("give one of 'cover' and 'inside'") }
                fit = parsed
                continue
            }
            if let parsed = CropPosition(option: field) {
                guard crop == nil else { throw bad("give one crop position") }
                crop = parsed
                continue
            }
            let known: Bool
            do throws(ImagePipeError) {
                known = try options.read(field, format: format)
            } catch {
                throw bad(error.reason)
            }
            guard known else {
                throw bad(
                    "unknown option '\(field)'; options: cover, inside, a crop position (\(CropPosition.names)), progressive, baseline, 444, effort=N, smart_subsample, lossless, nowatermark, watermark=FRACTION, metadata=POLICY, hdr=keep|drop, still"
                )
            }
        }
        let lossless = format.isLossless || options.lossless
        if options.lossless, !format.traits.losslessTakesQuality, quality != nil {
            throw bad("lossless \(format.rawValue) takes no quality: leave qN out")
        }
        if quality == nil && autoTarget == nil {
            guard lossless else { throw bad("the quality must be q1 to q100, auto or auto:TARGET") }
            quality = Self.pngQuality
        }
        if autoTarget != nil && lossless {
            throw bad("auto needs a lossy encoding; \(format.isLossless ? format.rawValue : "lossless \(format.rawValue)") has no quality to choose")
        }
        if let metadataChoice, metadataChoice != .strip, !format.traits.carriesMetadata {
            throw bad(
                "\(format.rawValue) outputs hold no metadata (libvips writes a bare JPEG XL codestream): metadata=\(metadataChoice.rawValue) cannot be kept"
            )
        }
        if hdrChoice == .keep, format != .jpeg {
            throw bad("only JPEG variants carry an HDR gain map (Ultra HDR); \(format.rawValue) outputs are SDR: hdr=keep cannot be kept")
        }
        if fit == .cover && (width == Self.unbounded || height == Self.unbounded) {
            throw bad("cover fills and crops to a box, so it needs both a width and a height")
        }
        if let crop, fit != .cover {
            throw bad("the crop position '\(crop.rawValue)' needs cover (only cover crops)")
        }
        self.init(
            name: name, width: width, height: height, fit: fit ?? .inside, crop: crop ?? .centre, format: format, quality: quality ?? 0,
            autoTarget: autoTarget, options: options)
        self.watermarkChoice = watermarkChoice ?? .standard
        self.still = still
        self.metadataChoice = metadataChoice
        self.metadata = metadataChoice ?? .strip
        self.hdrChoice = hdrChoice
        self.hdr = hdrChoice ?? .keep
    }

    /// This variant with the command's `--metadata` policy, unless its spec names its own.
    public func applying(metadata policy: MetadataPolicy) -> VariantSpec {
        var variant = self
        // A command-wide policy leaves out the formats that cannot hold metadata (JPEG XL): a spec that
        // asks one of them for it is refused as it is parsed.
        variant.metadata = metadataChoice ?? (format.traits.carriesMetadata ? policy : .strip)
        return variant
    }

    /// This variant with the command's watermark as its own option makes it: as it is, at the size
    /// the variant asks for, or none (`nowatermark`, or no watermark given).
    public func applying(_ watermark: Watermark?) -> VariantSpec {
        var variant = self
        variant.watermark = watermarkChoice.applied(to: watermark)
        return variant
    }

    /// The command-line form of this variant; parsing it gives this variant back (without the
    /// command's ``watermark``, which ``applying(_:)`` adds).
    public var specString: String {
        (encodingFields
            + [
                watermarkChoice.field, metadataChoice.map { "metadata=\($0.rawValue)" }, hdrChoice.map { "hdr=\($0.rawValue)" },
                still ? "still" : nil,
            ].compactMap { $0 })
            .joined(separator: ",")
    }

    /// The settings stored with every output, so any change to them makes the variant again on a
    /// re-run: the spec as written back, without its watermark option, and the watermark it got
    /// (logo and settings). A variant without a watermark keeps the fingerprint it had before
    /// watermarks existed; one whose option changes nothing it got (`watermark=0.2` at the
    /// command's size) keeps its outputs. The metadata policy is there unless it is `strip`, for the
    /// same reason: outputs made before policies existed, all stripped, stay up to date. `still` is
    /// left out: it changes no output but an animated source's, whose animated outputs say so
    /// themselves (``fingerprint(animated:)``).
    public var fingerprint: String {
        (encodingFields + [watermark?.settingsString, metadata == .strip ? nil : "metadata=\(metadata.rawValue)"].compactMap { $0 })
            .joined(separator: ",")
    }

    /// The spec's fields but the watermark option.
    private var encodingFields: [String] {
        let side = { (value: Int) in value == Self.unbounded ? "" : String(value) }
        var fields = ["\(name)=\(side(width))x\(side(height))", format.rawValue]
        if let autoTarget {
            fields.append("auto:" + Self.formatTarget(autoTarget))
        } else if !((format.isLossless || options.lossless) && quality == Self.pngQuality) {
            fields.append("q\(quality)")
        }
        fields += options.fields
        if fit == .cover { fields.append("cover") }
        // Left out at the centre, so outputs made before positions existed keep their fingerprint.
        if fit == .cover && crop != .centre { fields.append(crop.rawValue) }
        return fields
    }

    /// A target as written: `70`, `62.5`.
    public static func formatTarget(_ target: Double) -> String {
        target == target.rounded() ? String(Int(target)) : String(target)
    }

    /// Whether the quality is chosen per image.
    public var isAuto: Bool { autoTarget != nil }

    /// Whether the encoding is lossy, so the quality means something.
    public var hasQuality: Bool { !format.isLossless && !options.lossless }
}

/// A named set of variants.
public enum Preset {
    /// The default `web` preset: a large JPEG, a medium WebP and a square WebP thumbnail.
    public static let web: [VariantSpec] = [
        VariantSpec(name: "large", width: 2048, height: 2048, fit: .inside, format: .jpeg, quality: 82),
        VariantSpec(name: "medium", width: 1024, height: 1024, fit: .inside, format: .webp, quality: 78),
        VariantSpec(name: "thumb", width: 320, height: 320, fit: .cover, format: .webp, quality: 70),
    ]

    /// `web` with each quality chosen per image: every variant's target is the worst score the fixed
    /// `web` preset gave any photo of the bench corpus (README, "Quality chosen per image"), so no
    /// image looks worse than the fixed preset's worst, and the rest get fewer bytes.
    public static let webAuto: [VariantSpec] = [
        VariantSpec(name: "large", width: 2048, height: 2048, fit: .inside, format: .jpeg, quality: 82, autoTarget: 67.5),
        VariantSpec(name: "medium", width: 1024, height: 1024, fit: .inside, format: .webp, quality: 78, autoTarget: 59.5),
        VariantSpec(name: "thumb", width: 320, height: 320, fit: .cover, format: .webp, quality: 70, autoTarget: 54.5),
    ]

    /// The presets by name.
    public static let names = ["web", "web-auto"]

    /// A preset by name.
    public static func named(_ name: String) -> [VariantSpec]? {
        switch name {
        case "web": web
        case "web-auto": webAuto
        default: nil
        }
    }

    /// The variants a command runs with: those given as specs, or else the named preset, built in
    /// or among `defined` (a configuration file's, by name, in order); checked.
    public static func variants(
        _ specs: [String], preset: String,
        defined: [(name: String, specs: [String])] = []
    ) throws(ImagePipeError) -> [VariantSpec] {
        var named = named(preset)
        if named == nil, let definedSpecs = defined.first(where: { $0.name == preset })?.specs {
            named = try definedSpecs.map { (text) throws(ImagePipeError) in try VariantSpec(parsing: text) }
        }
        guard let named else {
            let all = names + defined.map(\.name)
            throw .configuration(
                "unknown preset '\(preset)' (presets: \(all.joined(separator: ", ")))\(NameSuggestion.hint(for: preset, among: all))")
        }
        let variants = try specs.isEmpty ? named : specs.map { (text) throws(ImagePipeError) in try VariantSpec(parsing: text) }
        try validate(variants)
        return variants
    }

    /// Checks a variant list: at least one, unique names.
    public static func validate(_ variants: [VariantSpec]) throws(ImagePipeError) {
        guard !variants.isEmpty else { throw .configuration("at least one variant is needed") }
        var seen = Set<String>()
        for variant in variants where !seen.insert(variant.name).inserted {
            throw .configuration("variant name '\(variant.name)' is used twice")
        }
    }
}

extension Unicode.Scalar {
    var isASCIIAlphanumeric: Bool {
        ("a"..."z").contains(self) || ("A"..."Z").contains(self) || ("0"..."9").contains(self)
    }
}

extension StringProtocol {
    func trimmingCharacters(in set: Character) -> String {
        var slice = Substring(self)
        while slice.first == set { slice.removeFirst() }
        while slice.last == set { slice.removeLast() }
        return String(slice)
    }
}
