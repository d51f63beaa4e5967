// A source named by URL, `s3://BUCKET/KEY` or `supabase://BUCKET/KEY`: an object (or a folder of them) in a store.
import Foundation

/// A bucket and a key under one of the schemes imagepipe reads sources from.
///
/// The key is taken exactly as written, not percent-decoded nor normalised: `s3://media/trip/a b.jpg`
/// names the key `trip/a b.jpg`, `s3://media//a.jpg` the key `/a.jpg` and `s3://media/a/../b.jpg`
/// the key `a/../b.jpg` (each an object of its own in a store), and that is also how the source is
/// named in results.
public struct ObjectLocation: Sendable, Hashable, CustomStringConvertible {
    /// The schemes sources can be read from.
    public static let schemes: Set<String> = ["s3", "supabase"]

    /// `s3` or `supabase`.
    public let scheme: String
    /// The bucket.
    public let bucket: String
    /// The object's key; for a folder, its prefix (empty for the whole bucket, else ending in `/`).
    public let key: String

    /// Creates a location from its parts.
    public init(scheme: String, bucket: String, key: String) {
        self.scheme = scheme
        self.bucket = bucket
        self.key = key
    }

    /// Whether `text` is a URL under one of ``schemes`` (rather than a local path).
    public static func isURL(_ text: String) -> Bool {
        guard let separator = text.range(of: "://") else { return false }
        return schemes.contains(text[..<separator.lowerBound].lowercased())
    }

    /// What a source may be, for messages that refuse one.
    public static let supportedSources =
        "local files and folders, s3://BUCKET/KEY, supabase://BUCKET/KEY, or a list of them (--from FILE)"

    /// Why a source with an unsupported `scheme` (see ``unsupportedScheme(of:)``) cannot be read.
    public static func unsupportedReason(_ scheme: String) -> String {
        let downloading = scheme.hasPrefix("http") ? " (download it first, e.g. with curl -O)" : ""
        return "\(scheme):// sources are not supported\(downloading); sources are \(supportedSources)"
    }

    /// What a worker's environment needs before it reads sources of `scheme`: a worker on a
    /// PostgreSQL queue reads only the kinds of object store it has settings for.
    public static func settingsHint(_ scheme: String) -> String {
        switch scheme {
        case "s3": "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE) in its environment"
        case "supabase": "set SUPABASE_URL and SUPABASE_SERVICE_ROLE_KEY (or SUPABASE_KEY) in its environment"
        default: "sources are \(supportedSources)"
        }
    }

    /// The scheme of a URL that imagepipe cannot read sources from (`https` in
    /// `https://example.com/a.jpg`), or nil for a local path or a supported URL. Without it such a
    /// URL would be taken for a local path and reported as a file that does not exist.
    public static func unsupportedScheme(of text: String) -> String? {
        guard let separator = text.range(of: "://") else { return nil }
        let scheme = text[..<separator.lowerBound]
        guard let first = scheme.first, first.isASCII, first.isLetter,
            scheme.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+.-".contains($0)) })
        else { return nil }
        return schemes.contains(scheme.lowercased()) ? nil : scheme.lowercased()
    }

    /// Parses `SCHEME://BUCKET[/KEY]`: the key is everything after the one `/` that ends the bucket.
    ///
    /// - Throws: `configuration` naming the text when it is not such a URL or names no bucket.
    public init(parsing text: String) throws(ImagePipeError) {
        guard Self.isURL(text), let separator = text.range(of: "://") else {
            throw .configuration("'\(text)' is not an s3:// or supabase:// URL")
        }
        let rest = text[separator.upperBound...]
        let bucket = rest.prefix { $0 != "/" }
        guard !bucket.isEmpty else { throw .configuration("source '\(text)' names no bucket: use SCHEME://BUCKET/KEY") }
        guard
            bucket.unicodeScalars.allSatisfy({
                $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "-._".unicodeScalars.contains($0))
            })
        else {
            throw .configuration("source '\(text)' has an invalid bucket name '\(bucket)'")
        }
        self.init(
            scheme: text[..<separator.lowerBound].lowercased(), bucket: String(bucket),
            key: String(rest.dropFirst(bucket.count + 1)))
    }

    /// The location as a folder: the key with a trailing `/` (unless it is the whole bucket).
    public var asFolder: ObjectLocation {
        key.isEmpty || key.hasSuffix("/") ? self : ObjectLocation(scheme: scheme, bucket: bucket, key: key + "/")
    }

    /// The object at `key` in the same bucket.
    public func sibling(key: String) -> ObjectLocation {
        ObjectLocation(scheme: scheme, bucket: bucket, key: key)
    }

    /// `scheme://bucket/key`.
    public var description: String { "\(scheme)://\(bucket)/\(key)" }
}
