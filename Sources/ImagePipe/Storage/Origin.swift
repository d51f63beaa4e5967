// What every stored object records about the original it was made from, and how that travels as object metadata.
import Foundation

/// Which original an object was made from, stored with the object (an extended attribute on local
/// files, user metadata on S3 and Supabase).
public struct Origin: Sendable, Hashable, Codable {
    /// What a re-run that skips an original needs to describe it as well as the first run did:
    /// the original's displayed size, its format and its placeholder. Recorded on every output, so a
    /// skipped original's manifest line still gives `srcset` and `report` all they show.
    public struct Image: Sendable, Hashable, Codable {
        /// The original's size as displayed (after orientation).
        public var width: Int
        public var height: Int
        /// Its format as decoded.
        public var format: SourceFormat
        /// Its placeholder, when one was made.
        public var placeholder: Placeholder?
        /// What the analyses found in it, so a skipped original's record still has its PDQ hash
        /// for `imagepipe duplicates` (a few hundred bytes of the 4 KiB a local origin may take).
        public var facts: ImageFacts?

        /// Creates the description of an original.
        public init(width: Int, height: Int, format: SourceFormat, placeholder: Placeholder? = nil, facts: ImageFacts? = nil) {
            self.width = width
            self.height = height
            self.format = format
            self.placeholder = placeholder
            self.facts = facts
        }

        enum CodingKeys: String, CodingKey {
            case width, height, format, placeholder, facts
        }

        /// Written without the placeholder's data URI: it is made again from the ThumbHash when read
        /// back, and a local file's origin is read whole from at most 4 KiB of extended attribute,
        /// which a long name and location already take half of; every output of an original would
        /// repeat it.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(width, forKey: .width)
            try container.encode(height, forKey: .height)
            try container.encode(format, forKey: .format)
            if let placeholder { try placeholder.encode(to: container.superEncoder(forKey: .placeholder), withDataURI: false) }
            try container.encodeIfPresent(facts, forKey: .facts)
        }
    }

    /// Hex SHA-256 of the original's bytes.
    public var sha256: String
    /// The original's name as the job knew it (its relative path), for messages naming both sides
    /// of a collision.
    public var source: String
    /// The object's pixel size, so a skipped re-run can still report it without decoding.
    public var width: Int?
    /// See ``width``.
    public var height: Int?
    /// What the object is: the variant's spec (`large=2048x2048,jpeg,q82`) or `original`, so a
    /// re-run after a variant's settings changed makes it again instead of skipping it.
    public var variant: String?
    /// The original itself, as decoded; nil on objects written before imagepipe recorded it.
    public var image: Image?
    /// Where the original was read: a file's absolute path, an object's URL (``Job/location``), at
    /// most ``recordedSourceLimit`` characters of it. ``source`` is a name relative to the folder a
    /// batch was given, so two folders writing under one prefix may record the same names: this is
    /// what tells `imagepipe prune` which of them an output was made from. Nil on objects written
    /// before imagepipe recorded it.
    public var location: String?

    /// Creates an origin; a `location` longer than ``recordedSourceLimit`` characters is cut.
    public init(
        sha256: String, source: String, width: Int? = nil, height: Int? = nil, variant: String? = nil, image: Image? = nil,
        location: String? = nil
    ) {
        self.sha256 = sha256
        self.source = source
        self.width = width
        self.height = height
        self.variant = variant
        self.image = image
        self.location = location.map { String($0.prefix(Self.recordedSourceLimit)) }
    }

    /// Whether `other` was made from the same original bytes (names may differ: a re-delivery
    /// under another name of the same file is the same original).
    public func isSameOriginal(as other: Origin?) -> Bool { other?.sha256 == sha256 }
}

extension Origin {
    /// The origin as plain ASCII name–value pairs, for stores whose object metadata travels in HTTP
    /// headers: `imagepipe-sha256`, `imagepipe-source` (percent-encoded UTF-8, at most 200
    /// characters of the name), `imagepipe-location` (the same, of ``location``), `imagepipe-size`
    /// (`WxH`), `imagepipe-variant` (percent-encoded), `imagepipe-original` (`WxH,format`),
    /// `imagepipe-placeholder` (`#rrggbb,thumbhash`) and `imagepipe-facts` (``ImageFacts/headerValue``).
    public var metadataFields: [String: String] {
        // S3 takes 2 KB of user metadata in all: a very long name is cut (it only serves messages).
        var fields = [
            "imagepipe-sha256": sha256, "imagepipe-source": PercentEncoding.encodePath(String(source.prefix(Self.recordedSourceLimit))),
        ]
        if let location { fields["imagepipe-location"] = PercentEncoding.encodePath(location) }
        if let width, let height { fields["imagepipe-size"] = "\(width)x\(height)" }
        if let variant { fields["imagepipe-variant"] = PercentEncoding.encodePath(variant) }
        if let image {
            fields["imagepipe-original"] = "\(image.width)x\(image.height),\(image.format.rawValue)"
            // A ThumbHash is base64 (letters, digits, + / =), which a header value carries as it is.
            if let placeholder = image.placeholder { fields["imagepipe-placeholder"] = "\(placeholder.color),\(placeholder.thumbHash)" }
            if let facts = image.facts, !facts.isEmpty { fields["imagepipe-facts"] = facts.headerValue }
        }
        return fields
    }

    /// The most characters of the original's name object metadata records (see ``metadataFields``),
    /// and of its ``location`` on every store.
    public static let recordedSourceLimit = 200

    /// The variant's name (`large`) in ``variant``, or `original`; nil when the object records none.
    public var variantName: String? {
        guard let variant else { return nil }
        return String(variant.prefix { $0 != "=" && $0 != "," })
    }

    /// Reads ``metadataFields`` back (names are matched without regard to case); nil when the
    /// object carries no origin.
    public init?(metadataFields fields: [String: String]) {
        let lowered = Dictionary(fields.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { first, _ in first })
        guard let sha256 = lowered["imagepipe-sha256"], sha256.count == 64 else { return nil }
        let source = lowered["imagepipe-source"].flatMap { $0.removingPercentEncoding } ?? ""
        let size = lowered["imagepipe-size"].flatMap(Self.size)
        self.init(
            sha256: sha256, source: source, width: size?.width, height: size?.height,
            variant: lowered["imagepipe-variant"].flatMap { $0.removingPercentEncoding },
            location: lowered["imagepipe-location"].flatMap { $0.removingPercentEncoding })
        if let original = lowered["imagepipe-original"]?.split(separator: ",", maxSplits: 1), original.count == 2,
            let size = Self.size(String(original[0])), let format = SourceFormat(rawValue: String(original[1]))
        {
            var placeholder: Placeholder?
            if let parts = lowered["imagepipe-placeholder"]?.split(separator: ",", maxSplits: 1), parts.count == 2 {
                placeholder = Placeholder(thumbHash: String(parts[1]), color: String(parts[0]))
            }
            image = Image(
                width: size.width, height: size.height, format: format, placeholder: placeholder,
                facts: lowered["imagepipe-facts"].flatMap(ImageFacts.init(headerValue:)))
        }
    }

    /// `WxH` as numbers; nil for anything else.
    private static func size(_ text: String) -> (width: Int, height: Int)? {
        let parts = text.split(separator: "x").compactMap { Int($0) }
        return parts.count == 2 ? (parts[0], parts[1]) : nil
    }
}
