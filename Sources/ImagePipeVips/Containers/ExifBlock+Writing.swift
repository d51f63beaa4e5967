// Writing the EXIF block an output keeps: the tags its metadata policy allows, laid out anew, in the image helper.
public import Foundation
public import ImagePipe

extension ExifBlock {
    /// The largest block written: what fits one JPEG APP1 segment (65,535 bytes less its length field).
    public static let maximumOutput = 65_533

    static let orientation: UInt16 = 0x0112
    static let colourSpace: UInt16 = 0xA001

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
