// The record of an HDR gain map an original carries beside its SDR picture, and what its variants made of it.

/// An HDR gain map an original carries, and what its variants made of it.
///
/// Phones store HDR photos as an SDR picture (what every screen can show) plus a gain map that
/// brightens it on an HDR screen: Android's Ultra HDR JPEG (a second JPEG in an MPF index, described
/// by `hdrgm` XMP or ISO 21496-1 metadata), an iPhone's HEIC (an auxiliary image
/// `urn:com:apple:photo:2020:aux:hdrgainmap`), or an ISO 21496-1 `tmap` item in HEIF/AVIF. The
/// manifest says so for every such original, so that a variant without it is never taken for all
/// there was.
public struct GainMap: Sendable, Hashable, Codable {
    /// Where the gain map sits.
    public enum Kind: String, Sendable, Hashable, Codable {
        /// A JPEG with a gain-map JPEG after it in its MPF index (Android, Ultra HDR).
        case ultraHDRJPEG = "ultra_hdr_jpeg"
        /// An Apple HDR gain map, an auxiliary image of a HEIC (iPhone 12 and later).
        case appleHEIC = "apple_heic"
        /// An ISO 21496-1 tone-map item of a HEIF or AVIF.
        case isoHEIF = "iso_heif"
        /// No gain map: a HEIF or AVIF picture coded with BT.2100's PQ (ImagePipeVips' `HDRPicture`), tone mapped.
        case pq
        /// No gain map: a HEIF or AVIF picture coded with BT.2100's HLG, tone mapped.
        case hlg
    }

    /// Why the variants do not carry it: a stable code the helper sends, worded by the worker.
    public enum Reason: String, Sendable, Hashable, Codable, CaseIterable {
        /// Every JPEG variant has `--hdr drop` or `hdr=drop`.
        case dropped
        /// No variant is a JPEG, the one format imagepipe writes a gain map into.
        case noJPEGVariant = "no_jpeg_variant"
        /// An iPhone's map without the maker note that gives its headroom.
        case noHeadroom = "no_headroom"
        /// The map or its metadata cannot be read, or says what no gain map can mean.
        case unreadable
        /// A kind imagepipe does not read (an ISO 21496-1 `tmap` item: libheif 1.15 shows none).
        case unsupported
        /// The map does not cover its picture (another aspect), or a variant's crop is placed by
        /// the picture's content (`attention`, `entropy`), which the map cannot follow.
        case geometry
        /// A PQ or HLG picture, whose variants are SDR pictures tone mapped from it.
        case toneMapped = "tone_mapped"

        /// The manifest's words.
        public var words: String {
            switch self {
            case .dropped: "the variants are the SDR picture alone: --hdr drop (or hdr=drop) leaves the gain map out"
            case .noJPEGVariant: "the variants are the SDR picture alone: only JPEG variants carry a gain map (Ultra HDR)"
            case .noHeadroom: "the variants are the SDR picture alone: the photo's maker note gives no usable HDR headroom"
            case .unreadable: "the variants are the SDR picture alone: the gain map or its metadata cannot be used (see the log)"
            case .unsupported: "the variants are the SDR picture alone: imagepipe does not read ISO 21496-1 gain maps in HEIF or AVIF"
            case .geometry: "the variants are the SDR picture alone: the gain map does not follow the picture's geometry"
            case .toneMapped:
                "the variants are SDR, tone mapped from the PQ or HLG picture (up to 101 cd/m² unchanged, brighter rolled off to its brightest): imagepipe writes no HDR AVIF or HEIC"
            }
        }
    }

    /// Where it sits.
    public var kind: Kind
    /// Whether the variants carry it (HDR variants); false: they are the SDR picture alone.
    public var carried: Bool
    /// Why not, when not carried (or, when some variants carry it, why the others do not).
    public var reason: String?
    /// The headroom the HDR picture needs (its brightest over SDR white), when the map was read.
    public var headroom: Double?

    /// Creates a record.
    public init(kind: Kind, carried: Bool, reason: String? = nil, headroom: Double? = nil) {
        self.kind = kind
        self.carried = carried
        self.reason = reason
        self.headroom = headroom
    }

    /// A record of a map the variants do not carry, for `reason`.
    public init(kind: Kind, notCarried reason: Reason, headroom: Double? = nil) {
        self.init(kind: kind, carried: false, reason: reason.words, headroom: headroom)
    }

    /// The stable code of ``reason``, if it is one of ``Reason``'s words.
    public var reasonCode: Reason? { Reason.allCases.first { $0.words == reason } }

    /// The most stops of headroom a gain map may ask for: 8 (256 times SDR white), past every
    /// phone's and display's (phones write up to about 6). The helper accepts no gain map metadata
    /// beyond it, and the worker checks the headroom a helper reports against the same number.
    public static let maxStops = 8.0
}
