// What one output variant is: a box, how the image fits it, a format and a quality.

/// How an image is fitted to a variant's box.
public enum Fit: String, Sendable, Codable {
    /// Scaled down to fit within the box, keeping its aspect ratio.
    case inside
    /// Scaled down to fill the box and cropped around the centre; the output has the box's aspect ratio.
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
    /// The output encoding.
    public var format: OutputFormat
    /// Encoder quality, 1–100 (ignored by PNG, which is lossless).
    public var quality: Int

    /// Creates a variant; see ``init(parsing:)`` for the command-line form.
    public init(name: String, width: Int, height: Int, fit: Fit = .inside, format: OutputFormat, quality: Int) {
        self.name = name
        self.width = width
        self.height = height
        self.fit = fit
        self.format = format
        self.quality = quality
    }

    /// The box as a size.
    public var box: PixelSize { PixelSize(width: width, height: height) }

    /// The side of a box left open (`1600x`, `x1200`): larger than any image libvips accepts, so the
    /// other side alone decides the size, as with vipsthumbnail.
    public static let unbounded = 10_000_000

    /// The quality a PNG variant gets when its spec names none (PNG is lossless and ignores it).
    public static let pngQuality = 100
}

extension VariantSpec {
    /// Parses `NAME=WxH,FORMAT[,qN][,cover|inside]`, e.g. `photo=1600x1600,jpeg,q80`. Either side of
    /// the box may be left out (`1600x`, `x1200`) for a fit by the other side alone; the quality may be
    /// left out for PNG only.
    public init(parsing text: String) throws(ImagePipeError) {
        func bad(_ why: String) -> ImagePipeError {
            .configuration("invalid --variant '\(text)': \(why) (expected NAME=WxH,FORMAT,qN[,cover])")
        }
        guard let equals = text.firstIndex(of: "=") else { throw bad("missing '='") }
        let name = String(text[..<equals])
        guard !name.isEmpty, name.utf8.count <= 64,
              name.unicodeScalars.allSatisfy({ $0.isASCIIAlphanumeric || $0 == "-" || $0 == "_" })
        else { throw bad("the name must be 1–64 letters, digits, '-' or '_'") }

        var fields = text[text.index(after: equals)...].split(separator: ",", omittingEmptySubsequences: false)
            .map { $0.trimmingCharacters(in: " ") }
        guard (2...4).contains(fields.count) else { throw bad("wrong number of fields") }

        let dims = fields.removeFirst().lowercased().split(separator: "x", omittingEmptySubsequences: false)
        guard dims.count == 2, !(dims[0].isEmpty && dims[1].isEmpty),
              let width = dims[0].isEmpty ? Self.unbounded : Int(dims[0]),
              let height = dims[1].isEmpty ? Self.unbounded : Int(dims[1]),
              dims[0].isEmpty || (1...100_000).contains(width), dims[1].isEmpty || (1...100_000).contains(height)
        else { throw bad("the size must be WxH, Wx or xH with sides between 1 and 100000") }

        let formatName = fields.removeFirst()
        guard let format = OutputFormat(name: formatName) else {
            throw bad("unknown format '\(formatName)'; use jpeg, webp, avif or png")
        }

        var quality = Self.pngQuality
        if let qualityText = fields.first?.lowercased(), qualityText.hasPrefix("q") {
            fields.removeFirst()
            guard let parsed = Int(qualityText.dropFirst()), (1...100).contains(parsed) else {
                throw bad("the quality must be q1 to q100")
            }
            quality = parsed
        } else if format != .png {
            throw bad("the quality must be q1 to q100")
        }

        var fit = Fit.inside
        if let fitText = fields.first {
            guard fields.count == 1, let parsed = Fit(rawValue: fitText.lowercased()) else {
                throw bad("the last field may only be 'cover' or 'inside'")
            }
            fit = parsed
        }
        if fit == .cover && (width == Self.unbounded || height == Self.unbounded) {
            throw bad("cover fills and crops to a box, so it needs both a width and a height")
        }
        self.init(name: name, width: width, height: height, fit: fit, format: format, quality: quality)
    }

    /// The command-line form of this variant; parsing it gives this variant back.
    public var specString: String {
        let side = { (value: Int) in value == Self.unbounded ? "" : String(value) }
        let quality = format == .png && quality == Self.pngQuality ? "" : ",q\(quality)"
        return "\(name)=\(side(width))x\(side(height)),\(format.rawValue)\(quality)\(fit == .cover ? ",cover" : "")"
    }
}

/// A named set of variants.
public enum Preset {
    /// The default `web` preset: a large JPEG, a medium WebP and a square WebP thumbnail.
    public static let web: [VariantSpec] = [
        VariantSpec(name: "large", width: 2048, height: 2048, fit: .inside, format: .jpeg, quality: 82),
        VariantSpec(name: "medium", width: 1024, height: 1024, fit: .inside, format: .webp, quality: 78),
        VariantSpec(name: "thumb", width: 320, height: 320, fit: .cover, format: .webp, quality: 70),
    ]

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
