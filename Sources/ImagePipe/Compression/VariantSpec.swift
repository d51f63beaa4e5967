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
    /// The box width in pixels.
    public var width: Int
    /// The box height in pixels.
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
}

extension VariantSpec {
    /// Parses `NAME=WxH,FORMAT,qN[,cover|inside]`, e.g. `photo=1600x1600,jpeg,q80`.
    public init(parsing text: String) throws(ImagePipeError) {
        func bad(_ why: String) -> ImagePipeError {
            .configuration("invalid --variant '\(text)': \(why) (expected NAME=WxH,FORMAT,qN[,cover])")
        }
        guard let equals = text.firstIndex(of: "=") else { throw bad("missing '='") }
        let name = String(text[..<equals])
        guard !name.isEmpty, name.utf8.count <= 64,
              name.unicodeScalars.allSatisfy({ $0.isASCIIAlphanumeric || $0 == "-" || $0 == "_" })
        else { throw bad("the name must be 1–64 letters, digits, '-' or '_'") }

        let fields = text[text.index(after: equals)...].split(separator: ",", omittingEmptySubsequences: false)
            .map { $0.trimmingCharacters(in: " ") }
        guard fields.count == 3 || fields.count == 4 else { throw bad("wrong number of fields") }

        let dims = fields[0].lowercased().split(separator: "x", omittingEmptySubsequences: false)
        guard dims.count == 2, let width = Int(dims[0]), let height = Int(dims[1]),
              (1...100_000).contains(width), (1...100_000).contains(height)
        else { throw bad("the size must be WxH with both sides between 1 and 100000") }

        guard let format = OutputFormat(name: fields[1]) else {
            throw bad("unknown format '\(fields[1])'; use jpeg, webp, avif or png")
        }

        let qualityText = fields[2].lowercased()
        guard qualityText.hasPrefix("q"), let quality = Int(qualityText.dropFirst()), (1...100).contains(quality) else {
            throw bad("the quality must be q1 to q100")
        }

        var fit = Fit.inside
        if fields.count == 4 {
            guard let parsed = Fit(rawValue: fields[3].lowercased()) else {
                throw bad("the last field may only be 'cover' or 'inside'")
            }
            fit = parsed
        }
        self.init(name: name, width: width, height: height, fit: fit, format: format, quality: quality)
    }

    /// The command-line form of this variant.
    public var specString: String {
        "\(name)=\(width)x\(height),\(format.rawValue),q\(quality)\(fit == .cover ? ",cover" : "")"
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
