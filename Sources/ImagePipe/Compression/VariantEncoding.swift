// What encoding made of one variant: the one record of an output from the compressor to the manifest.
public import Foundation

/// What the compressor made of one variant, as every later step records it.
///
/// The compressor fills it in, the image helper's reply carries it across, the job's context holds
/// it while the output is stored, and ``VariantRecord`` writes it into the manifest line (and the
/// queue's record, and a notification) field for field. A fact about an encoded variant is added
/// here once and reaches the manifest with nothing copied along the way.
public struct VariantEncoding: Sendable, Equatable {
    /// Its pixel size.
    public var size: PixelSize
    /// The quality it was encoded at; nil for lossless encodings and originals kept whole.
    public var quality: Int?
    /// Its SSIMULACRA 2 score against the resized, unencoded image, when it was scored (`auto`, `--score`).
    public var score: Double?
    /// Encodes made to choose the quality, when a search chose it (`auto`); nil otherwise.
    public var encodes: Int?
    /// Whether the bytes are the original's own, its metadata removed, because encoding made them
    /// larger at the same size (then ``quality`` and ``score`` are nil).
    public var keptOriginal = false
    /// The frames it holds: more than 1 for an animated output of an animated source.
    public var frames = 1
    /// The headroom of the HDR picture it carries (an Ultra HDR JPEG: its SDR picture and a gain
    /// map; the brightest over SDR white); nil for an SDR output.
    public var hdrHeadroom: Double?

    /// A variant of `size`, with nothing else known yet.
    public init(
        size: PixelSize, quality: Int? = nil, score: Double? = nil, encodes: Int? = nil, keptOriginal: Bool = false, frames: Int = 1,
        hdrHeadroom: Double? = nil
    ) {
        self.size = size
        self.quality = quality
        self.score = score
        self.encodes = encodes
        self.keptOriginal = keptOriginal
        self.frames = frames
        self.hdrHeadroom = hdrHeadroom
    }
}

extension VariantEncoding: Codable {
    enum CodingKeys: String, CodingKey {
        case width, height, quality, score, encodes, keptOriginal = "kept_original", frames, hdrHeadroom = "hdr_headroom"
    }

    /// Read from the fields of a variant's record; those left out take their defaults (records
    /// written before a field existed).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        size = PixelSize(width: try container.decode(Int.self, forKey: .width), height: try container.decode(Int.self, forKey: .height))
        quality = try container.decodeIfPresent(Int.self, forKey: .quality)
        score = try container.decodeIfPresent(Double.self, forKey: .score)
        encodes = try container.decodeIfPresent(Int.self, forKey: .encodes)
        keptOriginal = try container.decodeIfPresent(Bool.self, forKey: .keptOriginal) ?? false
        frames = try container.decodeIfPresent(Int.self, forKey: .frames) ?? 1
        hdrHeadroom = try container.decodeIfPresent(Double.self, forKey: .hdrHeadroom)
    }

    /// Written among the fields of the variant's record. What is at its default is left out (a
    /// still image says nothing of frames, a variant encoded as it is of the original, an SDR one of
    /// HDR), the score is written to hundredths (SSIMULACRA 2 is not more precise than that) and the
    /// headroom to thousandths.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(size.width, forKey: .width)
        try container.encode(size.height, forKey: .height)
        try container.encodeIfPresent(quality, forKey: .quality)
        try container.encodeIfPresent(score.map { ($0 * 100).rounded() / 100 }, forKey: .score)
        try container.encodeIfPresent(encodes, forKey: .encodes)
        if keptOriginal { try container.encode(true, forKey: .keptOriginal) }
        if frames > 1 { try container.encode(frames, forKey: .frames) }
        try container.encodeIfPresent(hdrHeadroom.map { ($0 * 1000).rounded() / 1000 }, forKey: .hdrHeadroom)
    }
}
