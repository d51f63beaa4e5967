// Which of a source's metadata an output keeps: nothing, its copyright, what is safe to publish, or all of it.

/// What a variant's outputs keep of the source's metadata (`metadata=POLICY` in a `--variant`,
/// `--metadata POLICY` for every variant).
///
/// The policies are allow-lists of EXIF tags (``keeps(_:in:)``), not lists of what to remove: a
/// tag no one listed (a new camera's private serial, a vendor's location field) is dropped by
/// every policy but `keep`, rather than slipping through because no one thought of it.
public enum MetadataPolicy: String, Sendable, Hashable, Codable, CaseIterable {
    /// No metadata at all (the default, and the only one before policies existed).
    case strip
    /// The photographer and the rights: EXIF Artist and Copyright.
    case copyright
    /// `copyright`, plus when and with what the photo was taken (capture dates and their offsets,
    /// camera make and model, lens make, model and specification) and the colour profile when it
    /// still describes the output's pixels; never location, serial numbers, maker notes,
    /// thumbnails or editing history.
    case safe
    /// Everything the source's EXIF had (location and serials included; the maker note is passed
    /// on, but libvips' libexif drops one it cannot read), with the orientation reset to 1 (the
    /// pixels are turned upright) and without the thumbnail (IFD1), which would show the uncropped,
    /// unwatermarked original; the source's XMP and IPTC as they are.
    case keep

    /// The policies, for messages.
    public static let names = allCases.map(\.rawValue).joined(separator: ", ")

    /// A policy by name (`strip`, `copyright`, `safe`, `keep`), or an error naming the choices.
    public init(name: String) throws(ImagePipeError) {
        guard let policy = MetadataPolicy(rawValue: name.lowercased()) else {
            throw .configuration("unknown metadata policy '\(name)'; use \(Self.names)")
        }
        self = policy
    }

    /// Whether the output keeps the source's ICC profile: under `safe` and `keep`, and only a
    /// profile the output's pixels are still in (the caller checks that it is sRGB's: every other
    /// profile has been converted from, so writing it would make viewers convert twice).
    public var keepsColourProfile: Bool { self == .safe || self == .keep }

    /// Whether the source's XMP and IPTC blocks go into the output unchanged. Only `keep`: carrying
    /// their creator and rights fields alone would mean rewriting XML and IIM records from
    /// strangers, which imagepipe does not (yet) do; `copyright` and `safe` carry the EXIF fields.
    public var keepsXMPAndIPTC: Bool { self == .keep }

    /// Whether the output keeps the IPTC digital source type the source's XMP declares (an AI
    /// label, which the EU AI Act's Article 50 asks to stay machine-readable): every policy but
    /// `strip`. `copyright` and `safe` write it in an XMP packet of its own, the rest of the XMP left out.
    public var keepsDigitalSourceType: Bool { self != .strip }

    /// Whether `tag` in `directory` is kept.
    public func keeps(_ tag: UInt16, in directory: ExifBlock.Directory) -> Bool {
        switch self {
        case .strip: false
        case .copyright: Self.copyrightTags.contains(.init(directory, tag))
        case .safe: Self.copyrightTags.contains(.init(directory, tag)) || Self.safeTags.contains(.init(directory, tag))
        case .keep: !Self.neverCarried.contains(.init(directory, tag))
        }
    }

    /// A tag in its directory.
    package struct Key: Hashable {
        var directory: ExifBlock.Directory
        var tag: UInt16
        package init(_ directory: ExifBlock.Directory, _ tag: UInt16) {
            self.directory = directory
            self.tag = tag
        }
    }

    /// Artist, Copyright.
    static let copyrightTags: Set<Key> = [.init(.primary, 0x013B), .init(.primary, 0x8298)]

    /// Make, Model, DateTime; DateTimeOriginal, DateTimeDigitized, OffsetTime (all three),
    /// SubSecTime (all three), LensSpecification, LensMake, LensModel. Not BodySerialNumber
    /// (0xA431), LensSerialNumber (0xA435), MakerNote (0x927C), ImageUniqueID, OwnerName or any
    /// GPS tag: they are simply not listed.
    static let safeTags: Set<Key> = [
        .init(.primary, 0x010F), .init(.primary, 0x0110), .init(.primary, 0x0132),
        .init(.exif, 0x9003), .init(.exif, 0x9004), .init(.exif, 0x9010), .init(.exif, 0x9011), .init(.exif, 0x9012),
        .init(.exif, 0x9290), .init(.exif, 0x9291), .init(.exif, 0x9292),
        .init(.exif, 0xA432), .init(.exif, 0xA433), .init(.exif, 0xA434),
    ]

    /// What even `keep` leaves out, because it describes the source's encoding rather than the
    /// photo, and would be wrong in the output: Orientation and ColorSpace (written as 1, upright
    /// and sRGB, instead), the stored size, strip and tile offsets into data not carried, SubIFDs,
    /// the JPEG thumbnail's offset and length, and the EXIF pixel dimensions (libvips writes the output's).
    static let neverCarried: Set<Key> = [
        .init(.primary, 0x0100), .init(.primary, 0x0101), .init(.primary, 0x0111), .init(.primary, 0x0112),
        .init(.primary, 0x0117), .init(.primary, 0x0144), .init(.primary, 0x0145), .init(.primary, 0x014A),
        .init(.primary, 0x0201), .init(.primary, 0x0202),
        .init(.exif, 0xA001), .init(.exif, 0xA002), .init(.exif, 0xA003),
    ]
}
