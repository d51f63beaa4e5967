// The EXIF reader and writer behind the metadata policies: each policy's allow-list on a camera's block, and blocks from strangers read within bounds.
import Foundation
import ImagePipe
import ImagePipeTestSupport
import ImagePipeVips
import Testing

@Suite struct ExifBlockTests {
    /// The payload of the first APP1 `Exif` segment of a JPEG.
    static func exifSegment(of jpeg: Data) throws -> Data {
        let bytes = [UInt8](jpeg)
        var at = 2
        while at + 4 <= bytes.count, bytes[at] == 0xFF {
            let marker = bytes[at + 1], length = Int(bytes[at + 2]) << 8 | Int(bytes[at + 3])
            if marker == 0xE1, bytes[(at + 4)...].starts(with: Array("Exif".utf8)) { return Data(bytes[(at + 4)..<(at + 2 + length)]) }
            if marker == 0xDA { break }
            at += 2 + length
        }
        throw ExifMissing()
    }

    struct ExifMissing: Error {}

    /// The camera photo's block (`fixtures/make-metadata-photo.sh`).
    static func cameraBlock() throws -> ExifBlock {
        try #require(ExifBlock(parsing: try exifSegment(of: Fixtures.data("metadata/camera.jpg"))))
    }

    /// The tags of a block, as `directory:tag` in hex.
    static func tags(_ block: ExifBlock) -> Set<String> {
        Set(block.entries.map { "\($0.directory):\(String($0.tag, radix: 16))" })
    }

    static func string(_ block: ExifBlock, _ directory: ExifBlock.Directory, _ tag: UInt16) -> String? {
        block.entries.first { $0.directory == directory && $0.tag == tag }.map {
            String(decoding: $0.value.prefix { $0 != 0 }, as: UTF8.self)
        }
    }

    /// Each policy's block, written and read back: only its tags, Orientation 1, no thumbnail.
    @Test func eachPolicyKeepsItsTagsOfACamerasBlock() throws {
        let source = try Self.cameraBlock()
        // What the fixture carries, read by this reader: GPS, both serials, the maker note, IFD0's Orientation 6.
        let all = Self.tags(source)
        for tag in ["gps:2", "exif:a431", "exif:a435", "exif:927c", "primary:112", "primary:13b", "primary:8298", "exif:9003"] {
            #expect(all.contains(tag), "\(tag) in \(all.sorted())")
        }
        #expect(ExifBlock.carried(from: try Self.exifSegment(of: Fixtures.data("metadata/camera.jpg")), policy: .strip) == nil)

        func written(_ policy: MetadataPolicy) throws -> ExifBlock {
            let data = try #require(ExifBlock.carried(from: try Self.exifSegment(of: Fixtures.data("metadata/camera.jpg")), policy: policy))
            #expect(data.starts(with: Array("Exif".utf8) + [0, 0]))
            let block = try #require(ExifBlock(parsing: data))
            let orientation = block.entries.first { $0.directory == .primary && $0.tag == 0x0112 }
            #expect(orientation?.value == (block.bigEndian ? [0, 1] : [1, 0]), "\(policy)")
            return block
        }

        let copyright = try written(.copyright)
        #expect(Self.tags(copyright) == ["primary:13b", "primary:8298", "primary:112", "exif:a001"])
        #expect(Self.string(copyright, .primary, 0x013B) == "Ada Photographer")
        #expect(Self.string(copyright, .primary, 0x8298) == "(c) 2024 Ada Photographer")

        let safe = try written(.safe)
        #expect(
            Self.tags(safe) == [
                "primary:13b", "primary:8298", "primary:112", "primary:10f", "primary:110", "exif:9003", "exif:9004", "exif:9011",
                "exif:9291", "exif:a434", "exif:a001",
            ], "\(Self.tags(safe).sorted())")
        #expect(Self.string(safe, .exif, 0x9003) == "2024:05:06 07:08:09")
        #expect(Self.string(safe, .exif, 0xA434) == "EF24-70mm f/2.8L II USM")

        let keep = try written(.keep)
        let kept = Self.tags(keep)
        #expect(kept.isSuperset(of: ["gps:2", "gps:4", "exif:a431", "exif:a435", "exif:927c", "primary:13b", "exif:9003"]))
        #expect(!kept.contains("primary:201") && !kept.contains("primary:202"), "no thumbnail pointers: \(kept.sorted())")
        #expect(Self.string(keep, .exif, 0xA431) == "123456789012")
        #expect(keep.entries.filter { $0.tag == 0x0112 }.count == 1)
        // ColorSpace is sRGB in every block (the fixture's says uncalibrated): the output's pixels are.
        for block in [copyright, safe, keep] {
            let colourSpace = block.entries.filter { $0.directory == .exif && $0.tag == 0xA001 }
            #expect(colourSpace.map(\.value) == [block.bigEndian ? [0, 1] : [1, 0]])
        }
    }

    /// The allow-lists: a tag no list names (a serial, GPS, a future vendor's tag) is never kept but by `keep`.
    @Test func unlistedTagsAreDroppedByEveryPolicyButKeep() {
        for (directory, tag) in [(ExifBlock.Directory.exif, UInt16(0xA431)), (.exif, 0xA435), (.exif, 0x927C), (.gps, 0x0002), (.exif, 0xC000)] {
            for policy in [MetadataPolicy.strip, .copyright, .safe] { #expect(!policy.keeps(tag, in: directory)) }
            #expect(MetadataPolicy.keep.keeps(tag, in: directory))
        }
        #expect(!MetadataPolicy.keep.keeps(0x0112, in: .primary), "Orientation is written, never carried")
        #expect(!MetadataPolicy.keep.keeps(0x0201, in: .primary))
    }

    /// A little-endian block written by hand: IFD0 with Artist, a pointer to an EXIF directory that
    /// points back at IFD0 through its interoperability pointer, a GPS pointer out of range, and a tag
    /// claiming four billion values.
    static func hostileBlock() -> Data {
        var b: [UInt8] = Array("II".utf8) + [42, 0, 8, 0, 0, 0]
        func u16(_ v: Int) { b += [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF)] }
        func u32(_ v: Int) { b += [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24 & 0xFF)] }
        // IFD0 at 8: 4 entries, then the next-IFD offset, then Artist's text at 8 + 2 + 48 + 4 = 62.
        u16(4)
        u16(0x013B); u16(2); u32(6); u32(62)
        u16(0x8298); u16(2); u32(0xFFFF_FFFF); u32(62)
        u16(0x8769); u16(4); u32(1); u32(68)
        u16(0x8825); u16(4); u32(1); u32(0x7FFF_FFF0)
        u32(8)  // IFD1 would be IFD0 itself: never read
        b += Array("Ada\0\0\0".utf8)
        // The EXIF directory at 68: its interoperability pointer leads back to 8.
        u16(1)
        u16(0xA005); u16(4); u32(1); u32(8)
        u32(0)
        return Data(b)
    }

    @Test func aHostileBlockIsReadWithinItsBounds() throws {
        let block = try #require(ExifBlock(parsing: Self.hostileBlock()))
        #expect(Self.tags(block) == ["primary:13b"], "\(block.entries)")
        let written = try #require(ExifBlock.carried(from: Self.hostileBlock(), policy: .keep))
        #expect(Self.tags(try #require(ExifBlock(parsing: written))) == ["primary:13b", "primary:112", "exif:a001"])

        #expect(ExifBlock(parsing: Data("Exif\0\0MM\0".utf8)) == nil)
        #expect(ExifBlock(parsing: Data("Exif\0\0XX\0*\0\0\0\u{8}".utf8)) == nil)
        #expect(ExifBlock(parsing: Data(count: ExifBlock.maximumInput + 1)) == nil)
        // Cut anywhere, the block reads as far as it goes, or not at all.
        let whole = Self.hostileBlock()
        for length in 0..<whole.count { _ = ExifBlock(parsing: whole.prefix(length)) }
    }

    /// A value too large for one JPEG segment is left out rather than making a block no JPEG holds.
    @Test func aBlockLargerThanAJPEGSegmentDropsItsLargestValues() throws {
        let big = ExifBlock.Entry(directory: .exif, tag: 0x927C, type: 7, count: 70_000, value: [UInt8](repeating: 7, count: 70_000))
        let artist = ExifBlock.Entry(directory: .primary, tag: 0x013B, type: 2, count: 4, value: Array("Ada\0".utf8))
        let data = ExifBlock(bigEndian: true, entries: [big, artist]).serialized()
        #expect(data.count <= ExifBlock.maximumOutput)
        #expect(Self.tags(try #require(ExifBlock(parsing: data))) == ["primary:13b", "primary:112", "exif:a001"])
    }
}
