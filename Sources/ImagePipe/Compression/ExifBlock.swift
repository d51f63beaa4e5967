// A source's EXIF tags, read from untrusted bytes within fixed bounds, and a new EXIF block written from those a policy keeps.
public import Foundation

/// The tags of an EXIF block (a TIFF structure, with or without JPEG's `Exif\0\0` prefix): those of
/// IFD0, the EXIF, GPS and interoperability directories, each value kept as its raw bytes in the
/// block's byte order. The thumbnail directory (IFD1) and anything it points to are never read.
///
/// The block comes from strangers, so reading it is bounded: at most ``maximumInput`` bytes, at most
/// ``maximumEntries`` tags per directory, each directory read once (a pointer back to one already
/// read is ignored, so loops end), and every offset and length checked against the block before a
/// byte is read. A block that cannot be read is no block (nil), and the output gets no EXIF.
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

    /// The largest block read; a longer one is not read at all (a JPEG's EXIF is under 64 KiB).
    public static let maximumInput = 1 << 20
    /// The most tags read from one directory.
    public static let maximumEntries = 1000
    /// The most value bytes read from one block: tags may all point at the same bytes, and their
    /// copies must stay bounded too.
    public static let maximumValueBytes = 1 << 20
    /// The largest block written: what fits one JPEG APP1 segment (65,535 bytes less its length field).
    public static let maximumOutput = 65_533

    /// Tags that point to the sub-directories; the writer makes its own.
    static let exifPointer: UInt16 = 0x8769
    static let gpsPointer: UInt16 = 0x8825
    static let interoperabilityPointer: UInt16 = 0xA005
    static let orientation: UInt16 = 0x0112
    static let colourSpace: UInt16 = 0xA001

    /// JPEG's APP1 prefix, which libvips' EXIF blocks carry.
    static let prefix: [UInt8] = Array("Exif".utf8) + [0, 0]

    /// Creates a block from its parts.
    public init(bigEndian: Bool, entries: [Entry]) {
        self.bigEndian = bigEndian
        self.entries = entries
    }

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
        bigEndian = reader.bigEndian
        self.entries = entries
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

extension ExifBlock {
    /// The tags `policy` keeps; Orientation and ColorSpace are always left out (``serialized()`` writes 1 for both).
    public func filtered(by policy: MetadataPolicy) -> ExifBlock {
        ExifBlock(bigEndian: bigEndian, entries: entries.filter { !Writer.isWritten($0) && policy.keeps($0.tag, in: $0.directory) })
    }

    /// The tags `policy` keeps of the EXIF block in `data`, written as a new block (``serialized()``);
    /// nil when the policy keeps nothing of it, or it cannot be read.
    public static func carried(from data: Data?, policy: MetadataPolicy) -> Data? {
        guard policy != .strip, let data, let block = ExifBlock(parsing: data) else { return nil }
        let kept = block.filtered(by: policy)
        return kept.entries.isEmpty ? nil : kept.serialized()
    }

    /// The block as bytes: `Exif\0\0`, a TIFF header in this block's byte order, IFD0 with
    /// Orientation 1 and pointers to the EXIF directory (with ColorSpace sRGB) and to the GPS one
    /// when it has tags, those directories (the interoperability one inside EXIF's), no IFD1. Tags are sorted by number in
    /// each directory, as TIFF asks; when the block would not fit ``maximumOutput``, the largest
    /// values are left out until it does.
    public func serialized() -> Data {
        var kept = entries.filter { !Writer.isWritten($0) }
        while Self.layoutSize(of: kept) > Self.maximumOutput, let largest = kept.indices.max(by: { kept[$0].value.count < kept[$1].value.count }) {
            kept.remove(at: largest)
        }
        return Data(Writer(bigEndian: bigEndian).write(kept))
    }

    /// The bytes ``serialized()`` would write for `entries`.
    static func layoutSize(of entries: [Entry]) -> Int {
        Writer.plan(entries).total + prefix.count
    }

    /// Writes a TIFF structure.
    struct Writer {
        let bigEndian: Bool

        /// A directory's entries with their pointers, and where each directory starts.
        struct Plan {
            var directories: [(Directory, [Entry])]
            var offsets: [Directory: Int]
            var total: Int
        }

        /// Lays the directories out one after another, each followed by its values that do not fit
        /// in their entry.
        static func plan(_ entries: [Entry]) -> Plan {
            var groups: [Directory: [Entry]] = [:]
            var seen = Set<MetadataPolicy.Key>()
            // One value per tag and directory (the first), never a pointer, Orientation or ColorSpace of the caller's.
            for entry in entries
            where !isWritten(entry) && !isPointer(entry) && seen.insert(.init(entry.directory, entry.tag)).inserted {
                groups[entry.directory, default: []].append(entry)
            }
            // Orientation 1 and ColorSpace sRGB (the output's pixels are upright and sRGB; without it
            // libvips' libexif would add ColorSpace "uncalibrated"), and a placeholder pointer for each
            // sub-directory that has tags. Their values are written by ``write(_:)``.
            groups[.primary, default: []].append(Entry(directory: .primary, tag: ExifBlock.orientation, type: 3, count: 1, value: [0, 0]))
            groups[.exif, default: []].append(Entry(directory: .exif, tag: ExifBlock.colourSpace, type: 3, count: 1, value: [0, 0]))
            if groups[.interoperability] != nil {
                groups[.exif, default: []].append(pointerEntry(.exif, ExifBlock.interoperabilityPointer))
            }
            if groups[.exif] != nil { groups[.primary]!.append(pointerEntry(.primary, ExifBlock.exifPointer)) }
            if groups[.gps] != nil { groups[.primary]!.append(pointerEntry(.primary, ExifBlock.gpsPointer)) }
            var directories: [(Directory, [Entry])] = []
            var offsets: [Directory: Int] = [:]
            var position = 8
            for directory in [Directory.primary, .exif, .interoperability, .gps] {
                guard let group = groups[directory] else { continue }
                let sorted = group.sorted { $0.tag < $1.tag }
                offsets[directory] = position
                position += 2 + sorted.count * 12 + 4
                for entry in sorted where entry.value.count > 4 { position += entry.value.count + entry.value.count % 2 }
                directories.append((directory, sorted))
            }
            return Plan(directories: directories, offsets: offsets, total: position)
        }

        /// Orientation and ColorSpace, whose values the writer decides.
        static func isWritten(_ entry: Entry) -> Bool {
            (entry.directory == .primary && entry.tag == ExifBlock.orientation) || (entry.directory == .exif && entry.tag == ExifBlock.colourSpace)
        }

        static func isPointer(_ entry: Entry) -> Bool {
            switch (entry.directory, entry.tag) {
            case (.primary, ExifBlock.exifPointer), (.primary, ExifBlock.gpsPointer), (.exif, ExifBlock.interoperabilityPointer): true
            default: false
            }
        }

        static func pointerEntry(_ directory: Directory, _ tag: UInt16) -> Entry {
            Entry(directory: directory, tag: tag, type: 4, count: 1, value: [0, 0, 0, 0])
        }

        func write(_ entries: [Entry]) -> [UInt8] {
            let plan = Self.plan(entries)
            var out = ExifBlock.prefix
            out += bigEndian ? [0x4D, 0x4D] : [0x49, 0x49]
            out += u16(42) + u32(8)
            let base = out.count
            for (directory, group) in plan.directories {
                var data: [UInt8] = []
                let dataStart = plan.offsets[directory]! + 2 + group.count * 12 + 4
                out += u16(UInt16(group.count))
                for entry in group {
                    out += u16(entry.tag) + u16(entry.type) + u32(entry.count)
                    switch (directory, entry.tag) {
                    case (.primary, ExifBlock.orientation), (.exif, ExifBlock.colourSpace): out += u16(1) + [0, 0]
                    case (.primary, ExifBlock.exifPointer): out += u32(UInt32(plan.offsets[.exif]!))
                    case (.primary, ExifBlock.gpsPointer): out += u32(UInt32(plan.offsets[.gps]!))
                    case (.exif, ExifBlock.interoperabilityPointer): out += u32(UInt32(plan.offsets[.interoperability]!))
                    default:
                        if entry.value.count <= 4 {
                            out += entry.value + [UInt8](repeating: 0, count: 4 - entry.value.count)
                        } else {
                            out += u32(UInt32(dataStart + data.count))
                            data += entry.value
                            if entry.value.count % 2 == 1 { data.append(0) }
                        }
                    }
                }
                out += u32(0)
                out += data
            }
            assert(out.count - base + 8 == plan.total)
            return out
        }

        func u16(_ value: UInt16) -> [UInt8] {
            bigEndian ? [UInt8(value >> 8), UInt8(value & 0xFF)] : [UInt8(value & 0xFF), UInt8(value >> 8)]
        }

        func u32(_ value: UInt32) -> [UInt8] {
            let bytes = [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
            return bigEndian ? bytes : bytes.reversed()
        }
    }
}
