// A source's EXIF tags as values: the directories and tags the metadata policies' allow-lists name.
//
// Only the values live in the worker's module. Reading a block from a source and writing the one
// an output keeps happen in the image helper, on strangers' bytes: ImagePipeVips'
// `Containers/ExifBlock+Parsing.swift` and `ExifBlock+Writing.swift`.

/// The tags of an EXIF block (a TIFF structure, with or without JPEG's `Exif\0\0` prefix): those of
/// IFD0, the EXIF, GPS and interoperability directories, each value kept as its raw bytes in the
/// block's byte order. The thumbnail directory (IFD1) and anything it points to are never read.
public struct ExifBlock: Sendable, Hashable {
    /// Where a tag lives.
    public enum Directory: Int, Sendable, Hashable, CaseIterable {
        /// IFD0: the main image's tags (Make, Model, Artist, Copyright, Orientation, …).
        case primary
        /// The EXIF sub-directory (dates, exposure, lens, serial numbers, MakerNote, …).
        case exif
        /// The GPS sub-directory.
        case gps
        /// The interoperability sub-directory, inside the EXIF one.
        case interoperability
    }

    /// One tag with its value.
    public struct Entry: Sendable, Hashable {
        public var directory: Directory
        public var tag: UInt16
        /// The TIFF field type (1–13).
        public var type: UInt16
        /// The number of values of `type`.
        public var count: UInt32
        /// The value's bytes, `count` × the type's size, in the block's byte order.
        public var value: [UInt8]

        public init(directory: Directory, tag: UInt16, type: UInt16, count: UInt32, value: [UInt8]) {
            self.directory = directory
            self.tag = tag
            self.type = type
            self.count = count
            self.value = value
        }
    }

    /// Whether values are big-endian (`MM`) rather than little-endian (`II`).
    public var bigEndian: Bool
    /// The tags, in the order read (directory by directory).
    public var entries: [Entry]

    /// Creates a block from its parts.
    public init(bigEndian: Bool, entries: [Entry]) {
        self.bigEndian = bigEndian
        self.entries = entries
    }
}
