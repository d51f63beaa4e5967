// Plain JPEGs that skip libvips: the same bytes as the libvips path, and libvips for everything else.
import Foundation
import ImagePipe
import ImagePipeTestSupport
import ImagePipeVips
import Testing

@Suite struct DirectJPEGTests {
    /// The libvips path alone: the oracle the direct path must match byte for byte.
    static let throughLibvips: VipsCompressor = {
        _ = Fixtures.compressor
        var configuration = VipsCompressor.Configuration()
        configuration.decodesPlainJPEGsDirectly = false
        // The two encoders compared, not what is kept afterwards.
        configuration.keepsSmallerOriginal = false
        return try! VipsCompressor(configuration: configuration)
    }()

    static let plain =
        (0...8).map { "images/exif-orientation/Landscape_\($0).jpg" }
        + ["grey", "small-200x150", "small-400x300", "progressive", "landscape", "tall", "panorama"].map { "images/formats/\($0).jpg" }

    /// Variant lists that need no resize for any fixture above, covering every encoder setting.
    static let variantLists: [[VariantSpec]] = [
        ["photo=4000x4000,jpeg,q80"],
        [
            "a=4000x4000,jpeg,q92", "b=5000x4000,jpeg,q70,progressive", "c=4000x5000,jpeg,q80,444", "d=4000x4000,jpeg,q85,baseline",
            "e=3200x2400,jpeg,q40",
        ],
    ].map { $0.map(Fixtures.variant) }

    func direct(_ bytes: Data, _ variants: [VariantSpec]) -> CompressedImage? {
        Fixtures.compressor.compressDirectly(
            SourceImage(name: "direct", content: .bytes(bytes)), variants: variants, limits: .default, memory: .unlimited)
    }

    func expectSameAsLibvips(_ bytes: Data, _ variants: [VariantSpec], _ name: String) throws {
        let direct = try #require(self.direct(bytes, variants), "\(name) must take the direct path")
        let reference = try Self.throughLibvips.compress(SourceImage(name: name, content: .bytes(bytes)), variants: variants, limits: .default)
        #expect(direct.sourceFormat == reference.sourceFormat)
        #expect(direct.sourceSize == reference.sourceSize, "\(name)")
        #expect(direct.placeholder == reference.placeholder, "\(name)")
        #expect(direct.variants.count == reference.variants.count)
        for (mine, theirs) in zip(direct.variants, reference.variants) {
            #expect(mine.encoding.size == theirs.encoding.size, "\(name) \(mine.spec.name)")
            #expect(mine.encoding.quality == theirs.encoding.quality)
            // Compared first: Swift Testing would diff two mismatched byte collections element by element.
            let identical = mine.data == theirs.data
            #expect(identical, "\(name) \(mine.spec.name): \(mine.data.count) bytes against libvips' \(theirs.data.count)")
        }
    }

    @Test(arguments: plain)
    func plainJPEGsComeOutByteForByteAsLibvipsMakesThem(_ fixture: String) throws {
        for variants in Self.variantLists {
            try expectSameAsLibvips(Fixtures.data(fixture), variants, fixture)
        }
    }

    @Test func theDirectPathIsTheOneCompressTakes() throws {
        // A compressor of its own, so no other test's images are counted.
        let compressor = try VipsCompressor()
        let variants = [Fixtures.variant("photo=4000x4000,jpeg,q80")]
        let source = SourceImage(name: "Landscape_6.jpg", content: .bytes(Fixtures.data("images/exif-orientation/Landscape_6.jpg")))
        let result = try compressor.compress(source, variants: variants, limits: .default)
        #expect(compressor.directCompressions.value == 1)
        #expect(result.sourceSize == PixelSize(width: 1800, height: 1200))
        // A resize goes through libvips, and is not counted.
        _ = try compressor.compress(source, variants: [Fixtures.variant("small=300x300,jpeg,q80")], limits: .default)
        #expect(compressor.directCompressions.value == 1)
    }

    @Test func anythingLibvipsWouldChangeOrWordGoesThroughLibvips() throws {
        let photo = [Fixtures.variant("photo=4000x4000,jpeg,q80")]
        let cases: [(String, [VariantSpec])] = [
            ("images/formats/cmyk.jpg", photo),  // CMYK: converted to sRGB through a profile
            ("images/formats/display-p3.jpg", photo),  // an ICC profile to convert from
            ("images/formats/landscape.jpg", [Fixtures.variant("small=300x300,jpeg,q80")]),  // a resize
            ("images/formats/landscape.jpg", photo + [Fixtures.variant("w=4000x4000,webp,q80")]),  // not JPEG out
            ("images/formats/landscape.jpg", [Fixtures.variant("photo=4000x4000,jpeg,auto")]),  // a quality search
            ("images/formats/landscape-png.png", photo),
            ("hostile/truncated.jpg", photo),  // libjpeg warns: libvips words the failure
            ("hostile/text.jpg", photo),
            ("hostile/empty.jpg", photo),
        ]
        // Labelled as a profile the way libvips recognises one, but not as the standard spells it.
        let photo0 = Fixtures.data("images/formats/landscape.jpg")
        let oddLabel = Array("ICC_PROFILEx".utf8) + [1, 1] + [UInt8](repeating: 7, count: 64)
        let oddSegment = Data([0xFF, 0xE2, 0, UInt8(oddLabel.count + 2)] + oddLabel)
        #expect(direct(photo0.prefix(2) + oddSegment + photo0.dropFirst(2), photo) == nil)
        for (fixture, variants) in cases {
            #expect(direct(Fixtures.data(fixture), variants) == nil, "\(fixture) \(variants.map(\.specString))")
        }
        #expect(direct(Fixtures.data("images/formats/landscape.jpg"), photo) != nil)
        // Over the pixel limit: libvips' path refuses it with its usual reason.
        let limits = CompressionLimits(maxPixels: 1000)
        let source = SourceImage(name: "landscape.jpg", content: .bytes(Fixtures.data("images/formats/landscape.jpg")))
        #expect(Fixtures.compressor.compressDirectly(source, variants: photo, limits: limits, memory: .unlimited) == nil)
        #expect(throws: ImagePipeError.self) { try Fixtures.compressor.compress(source, variants: photo, limits: limits) }
    }

    /// `landscape.jpg` with an EXIF block holding only an orientation entry, written in either byte
    /// order and with any type, to check the direct path reads it as libexif does for libvips.
    static func withOrientation(_ value: UInt32, type: UInt16 = 3, bigEndian: Bool = false) -> Data {
        func bytes(_ value: UInt32, _ count: Int) -> [UInt8] {
            (0..<count).map { index in UInt8(truncatingIfNeeded: value >> (8 * (bigEndian ? count - 1 - index : index))) }
        }
        let inline = type == 3 ? bytes(value, 2) + [0, 0] : bytes(value, 4)
        let tiff: [UInt8] =
            (bigEndian ? Array("MM".utf8) : Array("II".utf8)) + bytes(42, 2) + bytes(8, 4)
            + bytes(1, 2) + bytes(0x0112, 2) + bytes(UInt32(type), 2) + bytes(1, 4) + inline + bytes(0, 4)
        let payload = Array("Exif".utf8) + [0, 0] + tiff
        let length = payload.count + 2
        let segment: [UInt8] = [0xFF, 0xE1, UInt8(length >> 8), UInt8(length & 0xFF)] + payload
        let original = Fixtures.data("images/formats/landscape.jpg")
        return original.prefix(2) + Data(segment) + original.dropFirst(2)
    }

    @Test func exifOrientationIsReadAsLibvipsReadsIt() throws {
        let variants = [Fixtures.variant("photo=4000x4000,jpeg,q80")]
        for value: UInt32 in [1, 3, 5, 6, 8] {
            try expectSameAsLibvips(Self.withOrientation(value), variants, "little-endian \(value)")
            try expectSameAsLibvips(Self.withOrientation(value, bigEndian: true), variants, "big-endian \(value)")
        }
        // Out of range: libvips treats it as upright.
        try expectSameAsLibvips(Self.withOrientation(9), variants, "orientation 9")
        #expect(direct(Self.withOrientation(6, bigEndian: true), variants)?.sourceSize == PixelSize(width: 600, height: 900))
        // Laid out unusually: left to libvips rather than guessed.
        #expect(direct(Self.withOrientation(6, type: 4), variants) == nil)
    }
}
