// What the helper's analyses found in one original: its PDQ hash, its palette, its provenance.
import Foundation

/// The facts about one original that its record carries (`facts` in its manifest line, `done/`
/// record, PostgreSQL result and notification), made by the analyses the image helper runs over the
/// one decode (``FactKinds`` chooses them).
///
/// They come from the helper, which reads strangers' bytes: the worker takes them only through
/// ``fault``, which holds each field to the shape it can have, since they end up in HTML
/// (`report`), JSON read by other programs and object metadata.
public struct ImageFacts: Sendable, Hashable, Codable {
    /// Meta's PDQ perceptual hash: near-identical pictures (resized, recompressed, slightly cropped)
    /// have hashes a few bits apart.
    public struct PDQ: Sendable, Hashable, Codable {
        /// 256 bits as 64 lowercase hex digits, in the reference implementation's order.
        public var hash: String
        /// How much detail the hash rests on, 0–100: below 50 it says little (a flat or blank picture).
        public var quality: Int

        public init(hash: String, quality: Int) {
            self.hash = hash
            self.quality = quality
        }
    }

    /// One of the picture's main colours and the share of its pixels near it.
    public struct Colour: Sendable, Hashable, Codable {
        /// `#rrggbb`, lowercase.
        public var color: String
        /// The share of the picture's (at least half opaque) pixels, 0–1, to three decimals.
        public var share: Double

        public init(color: String, share: Double) {
            self.color = color
            self.share = (share * 1000).rounded() / 1000
        }
    }

    /// What the original says of where it came from. Detection only: nothing is verified.
    public struct Provenance: Sendable, Hashable, Codable {
        /// Whether it carries Content Credentials: a C2PA manifest store (a JPEG's APP11 JUMBF, a
        /// PNG's `caBX` chunk, a HEIF or AVIF file's C2PA box, a WebP's `C2PA` chunk).
        public var c2pa: Bool
        /// The IPTC digital source type its XMP declares, e.g.
        /// `http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia`.
        public var digitalSourceType: String?

        public init(c2pa: Bool, digitalSourceType: String? = nil) {
            self.c2pa = c2pa
            self.digitalSourceType = digitalSourceType
        }

        enum CodingKeys: String, CodingKey {
            case c2pa, digitalSourceType = "digital_source_type"
        }

        /// Whether the digital source type says the picture was made or composited by a generative
        /// model (IPTC's `trainedAlgorithmicMedia`, `compositeWithTrainedAlgorithmicMedia`,
        /// `compositeSynthetic`, `algorithmicMedia`): what the EU AI Act's Article 50 asks to be
        /// marked, and what `report` flags.
        public var saysAIMade: Bool {
            guard let type = digitalSourceType, let term = type.split(separator: "/").last else { return false }
            return Self.aiTerms.contains(String(term))
        }

        static let aiTerms: Set<String> = [
            "trainedAlgorithmicMedia", "compositeWithTrainedAlgorithmicMedia", "compositeSynthetic", "algorithmicMedia",
        ]

        /// The longest digital source type kept: IPTC's terms are under 100 characters.
        public static let maxSourceTypeLength = 200
    }

    public var pdq: PDQ?
    /// Most frequent first, at most ``maxColours``; nil when not made.
    public var palette: [Colour]?
    public var provenance: Provenance?

    /// The most colours a palette lists.
    public static let maxColours = 6

    public init(pdq: PDQ? = nil, palette: [Colour]? = nil, provenance: Provenance? = nil) {
        self.pdq = pdq
        self.palette = palette
        self.provenance = provenance
    }

    /// Whether no analysis found anything (all of them off): the record then leaves `facts` out.
    public var isEmpty: Bool { pdq == nil && palette == nil && provenance == nil }

    /// Nil when every field has the shape it may have; else the first that has not, described.
    /// The worker takes a helper's facts only through this.
    public var fault: String? {
        (pdq.flatMap(Self.fault(of:)) ?? palette.flatMap(Self.fault(of:)) ?? provenance.flatMap(Self.fault(of:))).map { "image facts with \($0)" }
    }

    static func fault(of pdq: PDQ) -> String? {
        guard isHex(pdq.hash, digits: 64) else { return "a PDQ hash that is not 64 hex digits" }
        guard (0...100).contains(pdq.quality) else { return "a PDQ quality of \(pdq.quality)" }
        return nil
    }

    static func fault(of palette: [Colour]) -> String? {
        guard palette.count <= maxColours else { return "\(palette.count) palette colours" }
        var total = 0.0
        for colour in palette {
            guard isColour(colour.color) else { return "a palette colour that is not #rrggbb" }
            guard colour.share.isFinite, colour.share > 0, colour.share <= 1 else { return "a colour share of \(colour.share)" }
            total += colour.share
        }
        // Each share is rounded to three decimals: six of them may add up a little past 1.
        guard total <= 1.01 else { return "colour shares adding up to \(total)" }
        return nil
    }

    static func fault(of provenance: Provenance) -> String? {
        guard let type = provenance.digitalSourceType, !isSourceType(type) else { return nil }
        return "a digital source type that is no short URI"
    }

    enum CodingKeys: String, CodingKey {
        case pdq, palette, provenance
    }

    /// Reads facts from a record, an origin or a notice as written, keeping only the parts of the
    /// shape a record may hold: a manifest, a local output's extended attribute or a database row
    /// can be edited by hand, and what is read goes on into HTML and headers. A part of another
    /// shape is left out, not the record it is in.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let pdq = (try? container.decodeIfPresent(PDQ.self, forKey: .pdq)) ?? nil
        let palette = (try? container.decodeIfPresent([Colour].self, forKey: .palette)) ?? nil
        let provenance = (try? container.decodeIfPresent(Provenance.self, forKey: .provenance)) ?? nil
        self.init(
            pdq: pdq.flatMap { Self.fault(of: $0) == nil ? $0 : nil }, palette: palette.flatMap { Self.fault(of: $0) == nil ? $0 : nil },
            provenance: provenance.flatMap { Self.fault(of: $0) == nil ? $0 : nil })
    }

    /// `#rrggbb`, lowercase hex.
    public static func isColour(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.count == 7 && bytes[0] == UInt8(ascii: "#") && isHex(String(decoding: bytes.dropFirst(), as: UTF8.self), digits: 6)
    }

    /// Exactly `digits` lowercase hex digits.
    static func isHex(_ text: String, digits: Int) -> Bool {
        text.utf8.count == digits
            && text.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) }
    }

    /// A URI of at most ``Provenance/maxSourceTypeLength`` printable ASCII characters, with a
    /// scheme, and none of the characters that would need escaping in HTML or a header: what an
    /// IPTC term is, and all a record passes on.
    public static func isSourceType(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty, bytes.count <= Provenance.maxSourceTypeLength, text.contains("://") else { return false }
        return bytes.allSatisfy { $0 > 0x20 && $0 < 0x7F && !"\"'<>\\`{}|^".utf8.contains($0) }
    }
}
