// The encodings a variant can be written in, and everything imagepipe knows of each, in one table.

/// An output encoding for a variant. What each one is (names, extension, media type, the options
/// it takes, what it costs, where `srcset` puts it) is its row in ``traits``: the only place a
/// format is spelled out, apart from the C shim's call of its saver.
public enum OutputFormat: String, Sendable, Codable, CaseIterable {
    case jpeg
    case webp
    case avif
    case png
    /// GIF through libvips' cgif saver: for animated sources, which it writes with every frame.
    case gif
    /// JPEG XL through libjxl.
    case jxl

    /// This format's row of the table.
    public var traits: FormatTraits { Self.table[self]! }

    /// The rows, made once: `traits` is read on every image's path (keys, memory, encoding).
    private static let table = Dictionary(uniqueKeysWithValues: allCases.map { ($0, row($0)) })

    private static func row(_ format: OutputFormat) -> FormatTraits {
        switch format {
        case .jpeg:
            FormatTraits(
                names: ["jpeg", "jpg"], displayName: "JPEG", fileExtension: "jpg", contentType: "image/jpeg", keepsAlpha: false,
                options: [.progressive, .fullChroma], autoStart: (61, 67.5), typicalSlope: 0.56,
                encoderBytesPerPixel: 6, srcsetRank: 4, encoder: 0, vipsLoader: "jpegload", header: .jpeg,
                peers: .init(vipsthumbnailOptions: ",optimize_coding"))
        case .webp:
            FormatTraits(
                names: ["webp"], displayName: "WebP", fileExtension: "webp", contentType: "image/webp", holdsAnimation: true,
                options: [.smartSubsample, .lossless, .effort], effort: 0...6, defaultEffort: 4, autoStart: (51, 59.5),
                typicalSlope: 0.45, encoderBytesPerPixel: 6, srcsetRank: 3, encoder: 1, vipsLoader: "webpload",
                savesExifWhenStripping: true, header: .webp)
        case .avif:
            FormatTraits(
                names: ["avif"], displayName: "AVIF", fileExtension: "avif", contentType: "image/avif", options: [.fullChroma, .effort],
                effort: 0...9,
                defaultEffort: 2, autoStart: (50, 70), encoderBytesPerPixel: 12, srcsetRank: 2, encoder: 2, vipsLoader: "heifload",
                header: .heif(brands: ["avif", "avis"]), peers: .init(vipsthumbnailOptions: ",compression=av1", pillow: false, imageMagick6: false))
        case .png:
            FormatTraits(
                names: ["png"], displayName: "PNG", fileExtension: "png", contentType: "image/png", hasQuality: false, encoderBytesPerPixel: 6,
                srcsetRank: 5, encoder: 3, vipsLoader: "pngload", header: .png, peers: .init(vipsthumbnailOptions: nil))
        case .gif:
            FormatTraits(
                names: ["gif"], displayName: "GIF", fileExtension: "gif", contentType: "image/gif", holdsAnimation: true, hasQuality: false,
                encoderBytesPerPixel: 6, srcsetRank: 6, encoder: 4, vipsLoader: "gifload", header: .gif)
        case .jxl:
            // libvips 8.14's saver takes efforts 3 to 9 (below 3 it warns and keeps 7). libjxl 0.7's
            // effort 7 (its default) took 1.75x effort 5's CPU and 2.4x its peak memory
            // for no smaller file on the bench photos, effort 3 12% more bytes (docs/usage.md,
            // "Encoder options"); 5 is the default here. Its encoder held about 1.8x AVIF's memory a
            // pixel (the vips CLI's peak at 2.6 megapixels, less JPEG's). libvips 8.14 writes a bare codestream,
            // with no box for EXIF or XMP: no metadata policy but strip applies.
            FormatTraits(
                names: ["jxl", "jpegxl"], displayName: "JPEG XL", fileExtension: "jxl", contentType: "image/jxl", options: [.lossless, .effort],
                effort: 3...9, losslessTakesQuality: false, defaultEffort: 5, autoStart: (70, 70), typicalSlope: 0.5, carriesMetadata: false,
                encoderBytesPerPixel: 24, srcsetRank: 1, encoder: 5, vipsLoader: "jxlload", header: .jxl,
                peers: .init(vipsthumbnailOptions: "", pillow: false, imageMagick6: false))
        }
    }

    /// Parses a format name as users type it (`jpeg`, `jpg`, `webp`, `avif`, `png`, `gif`, `jxl`, any case).
    public init?(name: String) {
        let name = name.lowercased()
        guard let format = Self.allCases.first(where: { $0.traits.names.contains(name) }) else { return nil }
        self = format
    }

    /// The formats' names for messages and help: `jpeg, webp, avif, png, gif or jxl`.
    public static var names: String {
        let all = allCases.map(\.rawValue)
        return all.dropLast().joined(separator: ", ") + " or " + all.last!
    }

    /// The formats that take `option`, for help: `jpeg, avif`.
    public static func taking(_ option: FormatTraits.Option) -> String {
        allCases.filter { $0.traits.options.contains(option) }.map(\.rawValue).joined(separator: ", ")
    }

    /// What `--variant`'s help says of formats, their quality and their options, from the table.
    public static var variantHelp: String {
        let qualityless = allCases.filter { !$0.traits.hasQuality }.map(\.rawValue)
        let lossless = allCases.filter { $0.traits.options.contains(.lossless) }.map { "lossless \($0.rawValue)" }
        let efforts = allCases.compactMap { format in format.traits.effort.map { "\(format.rawValue) \($0.lowerBound)-\($0.upperBound)" } }
        return "FORMAT: \(allCases.map(\.rawValue).joined(separator: ", ")). "
            + "QUALITY: qN, auto (SSIMULACRA 2 target \(VariantSpec.formatTarget(VariantSpec.defaultAutoTarget))) or auto:TARGET; "
            + "left out for \((qualityless + lossless).joined(separator: ", ")). "
            + "OPTION: cover, progressive or baseline (\(taking(.progressive))), 444 (\(taking(.fullChroma))), "
            + "effort=N (\(efforts.joined(separator: ", "))), smart_subsample (\(taking(.smartSubsample))), lossless (\(taking(.lossless))), "
    }

    /// The formats in the order `srcset` offers them: the most compact first, the fallback last.
    public static var srcsetOrder: [OutputFormat] { allCases.sorted { $0.traits.srcsetRank < $1.traits.srcsetRank } }

    /// The file extension used in keys, without the dot.
    public var fileExtension: String { traits.fileExtension }

    /// The media type stored with the object.
    public var contentType: String { traits.contentType }

    /// Whether the format can carry an alpha channel; JPEG cannot, so alpha is flattened onto white.
    public var keepsAlpha: Bool { traits.keepsAlpha }

    /// Whether an animated source's frames can all be written in this format (WebP and GIF); the
    /// others take the first frame, libvips 8.14 writing no animated AVIF, PNG or JPEG XL.
    public var holdsAnimation: Bool { traits.holdsAnimation }

    /// Whether the format has no quality to set: PNG and GIF (whose colours are chosen by quantising).
    public var isLossless: Bool { !traits.hasQuality }
}

/// One output format as imagepipe knows it: a row of ``OutputFormat/traits``.
public struct FormatTraits: Sendable {
    /// An encoder setting a spec may write (``EncoderOptions``).
    public enum Option: String, Sendable, CaseIterable {
        /// `progressive` / `baseline`.
        case progressive
        /// `444`.
        case fullChroma = "444"
        /// `smart_subsample`.
        case smartSubsample = "smart_subsample"
        /// `lossless`.
        case lossless
        /// `effort=N`.
        case effort
    }

    /// What the bench's other tools make of the format (``Peer``).
    public struct Peers: Sendable {
        /// What vipsthumbnail's output options add after `strip,Q=N`; nil when they are `strip` alone
        /// (no quality to set).
        public var vipsthumbnailOptions: String?
        /// Whether Pillow writes it.
        public var pillow: Bool
        /// Whether ImageMagick 6 writes it.
        public var imageMagick6: Bool

        public init(vipsthumbnailOptions: String? = "", pillow: Bool = true, imageMagick6: Bool = true) {
            self.vipsthumbnailOptions = vipsthumbnailOptions
            self.pillow = pillow
            self.imageMagick6 = imageMagick6
        }
    }

    /// The names a spec may use, the canonical one first.
    public let names: [String]
    /// Its name in prose: `JPEG XL`.
    public let displayName: String
    /// The file extension used in keys, without the dot.
    public let fileExtension: String
    /// The media type stored with the object and offered in `<source type>`.
    public let contentType: String
    /// Whether it carries an alpha channel (else alpha is flattened onto white).
    public let keepsAlpha: Bool
    /// Whether it holds every frame of an animation.
    public let holdsAnimation: Bool
    /// Whether it has a quality to set (`qN`, `auto`).
    public let hasQuality: Bool
    /// The encoder settings a spec may write for it.
    public let options: Set<Option>
    /// Whether `lossless` still takes a quality (WebP's sets its compression effort); where it does
    /// not (JPEG XL), a quality written beside it is refused rather than stored in the fingerprint.
    public let losslessTakesQuality: Bool
    /// The efforts it accepts (`effort=N`), and the one it gets when a spec names none.
    public let effort: ClosedRange<Int>?
    public let defaultEffort: Int?
    /// Where `auto`'s search starts: the quality at which the bench corpus's median photo scored
    /// `score` (SSIMULACRA 2), and the score points a quality step moves near it.
    public let autoStart: (quality: Double, score: Double)
    public let typicalSlope: Double
    /// Whether a variant may ask it to keep metadata (a policy other than `strip`). Not JPEG XL,
    /// which libvips 8.14 writes as a bare codestream; GIF takes the policy and cgif writes none,
    /// as before formats had a table.
    public let carriesMetadata: Bool
    /// Bytes its encoder holds per output pixel, for the working-memory estimate.
    public let encoderBytesPerPixel: Int
    /// Its place in `srcset`'s `<source>` order (lower first).
    public let srcsetRank: Int
    /// Its number in the C shim's `IpvFormat`.
    public let encoder: Int32
    /// The libvips loader that reads its outputs back (to score them, and in tests).
    public let vipsLoader: String
    /// Whether libvips 8.14's saver writes EXIF even when asked to strip (WebP's does).
    public let savesExifWhenStripping: Bool
    /// How its files begin and state their size: what a worker checks each output a helper hands
    /// back against (``OutputHeader``).
    public let header: OutputHeader.Layout
    /// What the bench's other tools make of it.
    public let peers: Peers

    init(
        names: [String], displayName: String, fileExtension: String, contentType: String, keepsAlpha: Bool = true, holdsAnimation: Bool = false,
        hasQuality: Bool = true, options: Set<Option> = [], effort: ClosedRange<Int>? = nil, losslessTakesQuality: Bool = true,
        defaultEffort: Int? = nil,
        autoStart: (quality: Double, score: Double)? = nil, typicalSlope: Double = 0.5, carriesMetadata: Bool = true,
        encoderBytesPerPixel: Int, srcsetRank: Int, encoder: Int32, vipsLoader: String, savesExifWhenStripping: Bool = false,
        header: OutputHeader.Layout, peers: Peers = Peers()
    ) {
        self.names = names
        self.displayName = displayName
        self.fileExtension = fileExtension
        self.contentType = contentType
        self.keepsAlpha = keepsAlpha
        self.holdsAnimation = holdsAnimation
        self.hasQuality = hasQuality
        self.options = options
        self.losslessTakesQuality = losslessTakesQuality
        self.effort = effort
        self.defaultEffort = defaultEffort
        // A format without a quality is written at the top one, which scores as a perfect copy.
        self.autoStart = autoStart ?? (Double(VariantSpec.pngQuality), 100)
        self.typicalSlope = typicalSlope
        self.carriesMetadata = carriesMetadata
        self.encoderBytesPerPixel = encoderBytesPerPixel
        self.srcsetRank = srcsetRank
        self.encoder = encoder
        self.vipsLoader = vipsLoader
        self.savesExifWhenStripping = savesExifWhenStripping
        self.header = header
        self.peers = peers
    }
}
