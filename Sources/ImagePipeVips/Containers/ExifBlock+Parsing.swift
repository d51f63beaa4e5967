// Reading a source's EXIF block: untrusted bytes, read within fixed bounds, in the image helper.
public import Foundation
public import ImagePipe

/// The block comes from strangers, so reading it is bounded: at most ``maximumInput`` bytes, at most
/// ``maximumEntries`` tags per directory, each directory read once (a pointer back to one already
/// read is ignored, so loops end), and every offset and length checked against the block before a
/// byte is read. A block that cannot be read is no block (nil), and the output gets no EXIF.
extension ExifBlock {
    /// The largest block read; a longer one is not read at all (a JPEG's EXIF is under 64 KiB).
    public static let maximumInput = 1 << 20
    /// The most tags read from one directory.
    public static let maximumEntries = 1000
    /// The most value bytes read from one block: tags may all point at the same bytes, and their
    /// copies must stay bounded too.
    public static let maximumValueBytes = 1 << 20

    /// Tags that point to the sub-directories; the writer makes its own.
    static let exifPointer: UInt16 = 0x8769
    static let gpsPointer: UInt16 = 0x8825
    static let interoperabilityPointer: UInt16 = 0xA005

    /// JPEG's APP1 prefix, which libvips' EXIF blocks carry.
    static let prefix: [UInt8] = Array("Exif".utf8) + [0, 0]

    /// The size in bytes of one value of a TIFF field type; nil for a type TIFF does not define.
    static func typeSize(_ type: UInt16) -> Int? {
        switch type {
        case 1, 2, 6, 7: 1
        case 3, 8: 2
        case 4, 9, 11, 13: 4
        case 5, 10, 12: 8
        default: nil
        }
    }

    /// Reads `data`; nil when it is no TIFF structure, too long, or its IFD0 cannot be read. Tags
    /// that cannot be read (an unknown type, a value outside the block) are left out one by one.
    public init?(parsing data: Data) {
        guard data.count <= Self.maximumInput else { return nil }
        var bytes = [UInt8](data)
        if bytes.starts(with: Self.prefix) { bytes.removeFirst(Self.prefix.count) }
        guard bytes.count >= 8 else { return nil }
        let reader: Reader
        switch (bytes[0], bytes[1]) {
        case (0x49, 0x49): reader = Reader(bytes: bytes, bigEndian: false)
        case (0x4D, 0x4D): reader = Reader(bytes: bytes, bigEndian: true)
        default: return nil
        }
        guard reader.u16(at: 2) == 42, let first = reader.u32(at: 4) else { return nil }
        var entries: [Entry] = []
        var visited = Visited()
        var budget = Self.maximumValueBytes
        guard reader.readDirectory(.primary, at: Int(first), into: &entries, visited: &visited, budget: &budget) else { return nil }
        self.init(bigEndian: reader.bigEndian, entries: entries)
    }

    /// The directories read so far, by kind and by offset: none is read twice.
    struct Visited {
        var directories = Set<Directory>()
        var offsets = Set<Int>()
    }

    /// Bounds-checked reads of the TIFF structure.
    struct Reader {
        let bytes: [UInt8]
        let bigEndian: Bool

        func u16(at offset: Int) -> UInt16? {
            guard offset >= 0, offset <= bytes.count - 2 else { return nil }
            let a = UInt16(bytes[offset]), b = UInt16(bytes[offset + 1])
            return bigEndian ? a << 8 | b : b << 8 | a
        }

        func u32(at offset: Int) -> UInt32? {
            guard offset >= 0, offset <= bytes.count - 4 else { return nil }
            let b = (0..<4).map { UInt32(bytes[offset + $0]) }
            return bigEndian ? b[0] << 24 | b[1] << 16 | b[2] << 8 | b[3] : b[3] << 24 | b[2] << 16 | b[1] << 8 | b[0]
        }

        /// Reads one directory's tags, and the sub-directories it points to; false when its
        /// count cannot be read. Each kind of directory is read once, from the first pointer to it,
        /// so a block whose pointers loop or repeat costs no more than a plain one.
        func readDirectory(
            _ directory: Directory, at offset: Int, into entries: inout [Entry], visited: inout Visited, budget: inout Int
        ) -> Bool {
            guard visited.directories.insert(directory).inserted, visited.offsets.insert(offset).inserted, let count = u16(at: offset)
            else { return false }
            var subdirectories: [(Directory, Int)] = []
            for index in 0..<min(Int(count), ExifBlock.maximumEntries) {
                let at = offset + 2 + index * 12
                guard let tag = u16(at: at), let type = u16(at: at + 2), let count = u32(at: at + 4) else { break }
                switch (directory, tag) {
                case (.primary, ExifBlock.exifPointer), (.primary, ExifBlock.gpsPointer), (.exif, ExifBlock.interoperabilityPointer):
                    if let target = u32(at: at + 8) {
                        let child: Directory = tag == ExifBlock.exifPointer ? .exif : tag == ExifBlock.gpsPointer ? .gps : .interoperability
                        subdirectories.append((child, Int(target)))
                    }
                    continue
                default: break
                }
                guard let size = ExifBlock.typeSize(type) else { continue }
                let length = Int(count) * size
                guard length <= bytes.count else { continue }
                let start: Int
                if length <= 4 {
                    start = at + 8
                } else {
                    guard let pointer = u32(at: at + 8) else { continue }
                    start = Int(pointer)
                }
                guard start >= 0, start <= bytes.count - length, length <= budget else { continue }
                budget -= length
                entries.append(Entry(directory: directory, tag: tag, type: type, count: count, value: Array(bytes[start..<start + length])))
            }
            for (child, target) in subdirectories {
                _ = readDirectory(child, at: target, into: &entries, visited: &visited, budget: &budget)
            }
            return true
        }
    }
}
