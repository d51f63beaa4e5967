// The formats imagepipe reads originals in: one name for each, from the decoder to the manifest.
import Foundation

/// An original's format as decoded. Its raw value is the manifest's `format` field.
public enum SourceFormat: String, Codable, Sendable, CaseIterable {
    case jpeg, png, webp, tiff, gif, heic, avif
    /// A HEIF container with neither HEVC nor AV1 inside (a still image some cameras write).
    case heif

    /// Its media type, stored with the original when `--with-original` keeps it.
    public var mediaType: String {
        switch self {
        case .jpeg: "image/jpeg"
        case .png: "image/png"
        case .webp: "image/webp"
        case .tiff: "image/tiff"
        case .gif: "image/gif"
        case .heic: "image/heic"
        case .avif: "image/avif"
        case .heif: "image/heif"
        }
    }

    /// How an error message lists the accepted formats.
    public static let acceptedList = "JPEG, PNG, WebP, TIFF, GIF, HEIC, AVIF"
}
