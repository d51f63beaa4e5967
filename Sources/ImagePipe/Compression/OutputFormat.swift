// The encodings a variant can be written in, with their file extensions and media types.

/// An output encoding for a variant.
public enum OutputFormat: String, Sendable, Codable, CaseIterable {
    case jpeg
    case webp
    case avif
    case png

    /// Parses a format name as users type it (`jpeg`, `jpg`, `webp`, `avif`, `png`, any case).
    public init?(name: String) {
        switch name.lowercased() {
        case "jpeg", "jpg": self = .jpeg
        case "webp": self = .webp
        case "avif": self = .avif
        case "png": self = .png
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
        }
    }

    /// The media type stored with the object.
    public var contentType: String {
        switch self {
        case .jpeg: "image/jpeg"
        case .webp: "image/webp"
        case .avif: "image/avif"
        case .png: "image/png"
        }
    }

    /// Whether the format can carry an alpha channel; JPEG cannot, so alpha is flattened onto white.
    public var keepsAlpha: Bool { self != .jpeg }
}
