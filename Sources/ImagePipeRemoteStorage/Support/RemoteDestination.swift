// Parses `SCHEME://BUCKET/PREFIX` destinations and builds the URLs recorded for stored objects.
import Foundation
public import ImagePipe

/// A bucket and the key prefix every object goes under.
public struct RemoteDestination: Sendable, Equatable {
    /// The bucket name.
    public let bucket: String
    /// The prefix, empty or ending with `/`.
    public let prefix: String

    /// Creates a destination; `prefix` gets its trailing slash here.
    public init(bucket: String, prefix: String = "") throws(ImagePipeError) {
        guard !bucket.isEmpty, bucket.count <= 255,
            bucket.unicodeScalars.allSatisfy({ $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "-._".unicodeScalars.contains($0)) })
        else {
            throw .configuration("invalid bucket name '\(bucket)': use letters, digits, '-', '.' and '_'")
        }
        var prefix = prefix
        while prefix.hasSuffix("/") { prefix.removeLast() }
        if !prefix.isEmpty {
            // The same rules as keys, so a prefix cannot smuggle `..` or empty segments into every key.
            do {
                try KeyTemplate.validate(key: prefix)
            } catch {
                throw .configuration("invalid prefix '\(prefix)' in the destination: \(error.reason)")
            }
            prefix += "/"
        }
        self.bucket = bucket
        self.prefix = prefix
    }

    /// Parses `scheme://BUCKET[/PREFIX]`.
    public init(parsing text: String, scheme: String) throws(ImagePipeError) {
        let lead = "\(scheme)://"
        guard text.lowercased().hasPrefix(lead) else {
            throw .configuration("destination '\(text)' does not start with \(lead)")
        }
        let rest = text.dropFirst(lead.count)
        guard !rest.contains("?"), !rest.contains("#") else {
            throw .configuration("destination '\(text)' must be \(lead)BUCKET/PREFIX without a query or fragment")
        }
        let bucket = rest.prefix { $0 != "/" }
        let prefix = rest.dropFirst(bucket.count).drop { $0 == "/" }
        guard !bucket.isEmpty else { throw .configuration("destination '\(text)' names no bucket: use \(lead)BUCKET/PREFIX") }
        try self.init(bucket: String(bucket), prefix: String(prefix))
    }

    /// The key in the bucket for a key relative to the destination.
    public func fullKey(_ key: String) -> String { prefix + key }

    /// `base/KEY` for a `--public-base-url`, with the key percent-encoded.
    public static func publicURL(base: String, key: String) -> String {
        PercentEncoding.url(base: base, key: key)
    }

    /// Checks a `--public-base-url` value.
    public static func validatePublicBaseURL(_ text: String) throws(ImagePipeError) {
        _ = try ServiceEndpoint(parsing: text, what: "--public-base-url")
    }
}
