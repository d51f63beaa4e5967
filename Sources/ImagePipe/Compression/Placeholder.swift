// What a page shows before an image loads: a ThumbHash, the dominant colour, and a tiny picture made from the ThumbHash.
//
// The record, as helpers send it and records store it. It is made from an original's pixels in the
// image helper (ImagePipeVips' `Analyses/Placeholder+Encoding.swift`).

/// A placeholder for one original: a ThumbHash (a ~25-byte blurred preview that keeps the aspect
/// ratio and alpha, https://evanw.github.io/thumbhash/) and the dominant colour as `#rrggbb`; records
/// also carry the ThumbHash as a tiny PNG (``dataURI``) for pages without a ThumbHash decoder.
public struct Placeholder: Sendable, Codable, Hashable {
    /// The ThumbHash, base64.
    public var thumbHash: String
    /// The most common colour, `#rrggbb`: the mean of the pixels in the fullest of 4096 colour bins
    /// (4 bits per channel), transparent pixels left out, so a photo of a red car on grey asphalt
    /// gives grey, where the mean colour would give a muddy brown.
    public var color: String

    enum CodingKeys: String, CodingKey {
        case thumbHash = "thumbhash", color, dataURI = "data_uri"
    }

    /// Reads `thumbhash` and `color`; a recorded `data_uri` is left unread, since ``dataURI`` makes
    /// it again from the ThumbHash: a record from before it existed reads the same, and what a page
    /// gets from it is always an image URI, whatever a hand-edited record says.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        thumbHash = try container.decode(String.self, forKey: .thumbHash)
        color = try container.decode(String.self, forKey: .color)
    }

    /// Writes `thumbhash`, `color` and `data_uri` (``dataURI``, when the ThumbHash can be read).
    public func encode(to encoder: any Encoder) throws {
        try encode(to: encoder, withDataURI: true)
    }

    /// The same, or without `data_uri` (see ``Origin/Image``).
    func encode(to encoder: any Encoder, withDataURI: Bool) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(thumbHash, forKey: .thumbHash)
        try container.encode(color, forKey: .color)
        if withDataURI, let dataURI { try container.encode(dataURI, forKey: .dataURI) }
    }

    /// The colour, when it is one (`#rrggbb`): what pages and reports put in a `style`. A colour read
    /// back from a manifest or an object's metadata is whatever was written there, and anything
    /// else (`#fff;background:url(…)`) would add declarations of its own to the page's CSS.
    public var cssColor: String? {
        let bytes = Array(color.utf8)
        guard bytes.count == 7, bytes[0] == UInt8(ascii: "#") else { return nil }
        return bytes.dropFirst().allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x66) } ? color : nil
    }

    /// A placeholder as recorded (read back from a manifest or an object's origin).
    public init(thumbHash: String, color: String) {
        self.thumbHash = thumbHash
        self.color = color
    }
}
