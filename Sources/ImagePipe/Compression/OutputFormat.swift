// The encodings a variant can be written in, with their file extensions and media types.

/// An output encoding for a variant.
public enum OutputFormat: String, Sendable, Codable, CaseIterable {
    case jpeg
    case webp
    case avif
    case png
    /// GIF through libvips' cgif saver: for animated sources, which it writes with every frame.
    case gif

    /// Parses a format name as users type it (`jpeg`, `jpg`, `webp`, `avif`, `png`, `gif`, any case).
    public init?(name: String) {
        switch name.lowercased() {
        case "jpeg", "jpg": self = .jpeg
        case "webp": self = .webp
        case "avif": self = .avif
        case "png": self = .png
        case "gif": self = .gif
        default: return nil
        }
    }

    /// The file extension used in keys, without the dot.
    public var fileExtension: String {
        switch self {
        case .jpeg: "jpg"
        case .webp: "webp"
        case .avif: "avif"
        case .png: "png"
        case .gif: "gif"
        }
    }

    /// The media type stored with the object.
    public var contentType: String {
        switch self {
        case .jpeg: "image/jpeg"
        case .webp: "image/webp"
        case .avif: "image/avif"
        case .png: "image/png"
        case .gif: "image/gif"
        }
    }

    /// Whether the format can carry an alpha channel; JPEG cannot, so alpha is flattened onto white.
    public var keepsAlpha: Bool { self != .jpeg }

    /// Whether an animated source's frames can all be written in this format (WebP and GIF); the
    /// others take the first frame, libvips 8.14 writing no animated AVIF or PNG.
    public var holdsAnimation: Bool { self == .webp || self == .gif }

    /// Whether the format has no quality to set: PNG and GIF (whose colours are chosen by quantising).
    public var isLossless: Bool { self == .png || self == .gif }
}
