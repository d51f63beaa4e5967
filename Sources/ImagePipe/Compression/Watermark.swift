// A logo laid over the variants that take it: which logo (by its bytes' hash), where, how large and how opaque.

/// The overlay a variant gets once resized (and cropped), before it is encoded (`--watermark`).
///
/// It names the logo by the SHA-256 of its file's bytes rather than by its path, so that the
/// settings written with every output (``VariantSpec/fingerprint``) change when the logo does,
/// and outputs made with another logo are made again on a re-run.
public struct Watermark: Sendable, Hashable, Codable {
    /// Hex SHA-256 of the logo file.
    public var logoSHA256: String
    /// Where the logo sits: the centre or a compass point (never a smart position, which has no
    /// place of its own).
    public var position: CropPosition
    /// Pixels between the logo and the edges it is anchored to; nil for ``defaultMarginFraction``
    /// of the output's shorter side, so a thumbnail's logo is not pushed in as far as a large one's.
    public var margin: Int?
    /// How much of the logo shows, 0–1: its alpha is multiplied by this.
    public var opacity: Double
    /// The logo's width as a fraction of the output's width (0–1]; a logo is never enlarged.
    public var size: Double

    /// The position when none is given: the corner least likely to hold a photo's subject.
    public static let defaultPosition = CropPosition.southeast
    /// The margin when none is given, as a fraction of the output's shorter side.
    public static let defaultMarginFraction = 0.02
    /// The opacity when none is given: the logo shows, the photo under it too.
    public static let defaultOpacity = 0.6
    /// The size when none is given: a fifth of the output's width.
    public static let defaultSize = 0.2

    /// The positions a watermark may take, for messages.
    public static let positionNames = CropPosition.allCases.filter { !$0.isSmart }.map(\.rawValue).joined(separator: ", ")

    /// Creates the settings; see ``check()`` for what is allowed.
    public init(
        logoSHA256: String, position: CropPosition = defaultPosition, margin: Int? = nil, opacity: Double = defaultOpacity,
        size: Double = defaultSize
    ) {
        self.logoSHA256 = logoSHA256
        self.position = position
        self.margin = margin
        self.opacity = opacity
        self.size = size
    }

    /// Refuses settings that cannot be drawn: a smart position, a negative margin, an opacity
    /// outside 0–1 or a size outside (0, 1].
    public func check() throws(ImagePipeError) {
        guard !position.isSmart else {
            throw .configuration("the watermark position must be one of \(Self.positionNames), not '\(position.rawValue)'")
        }
        if let margin, margin < 0 { throw .configuration("the watermark margin cannot be negative (\(margin))") }
        guard opacity.isFinite, (0...1).contains(opacity) else {
            throw .configuration("the watermark opacity must be from 0 to 1, not \(opacity)")
        }
        try Self.checkSize(size)
    }

    /// Refuses a size that is not a fraction of the width above 0 and at most 1.
    public static func checkSize(_ size: Double) throws(ImagePipeError) {
        guard size.isFinite, size > 0, size <= 1 else {
            throw .configuration("the watermark size must be a fraction of the output's width above 0 and at most 1, not \(size)")
        }
    }

    /// What the outputs record: the logo's hash and every setting, so changing any of them makes
    /// the variants again. Never parsed back, only compared.
    public var settingsString: String {
        let margin = margin.map { String($0) } ?? "auto"
        return "watermark=sha256:\(logoSHA256):\(position.rawValue):margin=\(margin):opacity=\(Self.number(opacity)):size=\(Self.number(size))"
    }

    /// Where the logo goes on an output of `output` pixels, and at what size, for a logo of `logo`
    /// pixels: scaled to ``size`` of the output's width (never enlarged, and never more than fits
    /// within the margins), then anchored at ``position``, ``margin`` in from the edges. Nil when
    /// no pixel of it would be left.
    public func placement(on output: PixelSize, logo: PixelSize) -> (size: PixelSize, left: Int, top: Int)? {
        guard logo.width > 0, logo.height > 0, output.width > 0, output.height > 0 else { return nil }
        let margin = margin ?? Int((Double(min(output.width, output.height)) * Self.defaultMarginFraction).rounded())
        let roomX = output.width - 2 * margin, roomY = output.height - 2 * margin
        guard roomX >= 1, roomY >= 1 else { return nil }
        let scale = min(
            1, size * Double(output.width) / Double(logo.width), Double(roomX) / Double(logo.width), Double(roomY) / Double(logo.height))
        let scaled = PixelSize(
            width: min(roomX, max(1, Int((Double(logo.width) * scale).rounded()))),
            height: min(roomY, max(1, Int((Double(logo.height) * scale).rounded()))))
        let anchor = position.anchor ?? (0.5, 0.5)
        let left = margin + Int((Double(roomX - scaled.width) * anchor.x).rounded())
        let top = margin + Int((Double(roomY - scaled.height) * anchor.y).rounded())
        return (scaled, left, top)
    }

    /// A fraction as written: `0.6`, `1`.
    static func number(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }
}

/// What one variant says about the watermark, among its options.
public enum WatermarkChoice: Sendable, Hashable, Codable {
    /// Nothing: the command's watermark as it is, if there is one.
    case standard
    /// `nowatermark`: none on this variant (a thumbnail too small to carry one).
    case off
    /// `watermark=FRACTION`: the command's watermark at this size (of the output's width).
    case size(Double)

    /// Reads a variant option: `nowatermark` or `watermark=FRACTION`; nil for any other option.
    init?(option: String) throws(ImagePipeError) {
        if option == "nowatermark" {
            self = .off
            return
        }
        guard option.hasPrefix("watermark=") else { return nil }
        guard let size = Double(option.dropFirst("watermark=".count)) else {
            throw .configuration("watermark= takes the logo's width as a fraction of the output's width, as watermark=0.1")
        }
        try Watermark.checkSize(size)
        self = .size(size)
    }

    /// The option as written; nil for ``standard``.
    var field: String? {
        switch self {
        case .standard: nil
        case .off: "nowatermark"
        case .size(let size): "watermark=" + Watermark.number(size)
        }
    }

    /// The watermark a variant with this choice gets from the command's.
    func applied(to watermark: Watermark?) -> Watermark? {
        switch self {
        case .standard: watermark
        case .off: nil
        case .size(let size):
            watermark.map {
                var sized = $0; sized.size = size; return sized
            }
        }
    }
}
