// PQ and HLG originals (10- and 12-bit HEIC and AVIF) give SDR variants tone mapped from their light, checked against numpy.
import Foundation
import ImagePipe
import ImagePipeTestSupport
import ImagePipeVips
import ImagePipeVipsTestSupport
import Testing

/// HEIC (pillow-heif) and AVIF (imagecodecs) originals coded with PQ or HLG, of a scene with a grey
/// ramp up to SDR white, highlights up to 1,000 cd/m² and colour patches, through the compressor:
/// the SDR variant is the picture ``ToneMapOracle`` works out from the original's light (libvips
/// alone would show the codes as sRGB's: PQ's white a dull grey, HLG's midtones too bright), its
/// highlights keep distinct levels below 255, its midtones are the scene's, and the manifest says
/// the HDR was not carried.
@Suite struct ToneMapTests {
    let directory = TemporaryDirectory(prefix: "imagepipe-tone-map")

    struct Original: Sendable, CustomStringConvertible {
        var container: String
        var transfer: Int
        var bits: Int
        var description: String { "\(container), transfer \(transfer), \(bits)-bit" }
    }

    static let originals = [
        Original(container: "heic", transfer: 16, bits: 10), Original(container: "heic", transfer: 18, bits: 12),
        Original(container: "avif", transfer: 16, bits: 12), Original(container: "avif", transfer: 18, bits: 10),
    ]

    func compress(_ path: String, _ specs: [String], hdr: HDRPolicy = .keep) throws -> CompressedImage {
        let variants = specs.map { Fixtures.variant($0).applying(hdr: hdr) }
        let source = SourceImage(name: path, content: .bytes(try Data(contentsOf: URL(fileURLWithPath: path))))
        return try Fixtures.compressor.compress(source, variants: variants, limits: .default)
    }

    @Test(arguments: originals)
    func aPQOrHLGOriginalGivesSDRToneMappedFromItsLight(original: Original) throws {
        let path = directory.url("original.\(original.container)")
        try ToneMapOracle.encode(path, container: original.container, transfer: original.transfer, bits: original.bits)
        // At the original's size, losslessly, so every pixel can be compared; and two lossy ones.
        let made = try compress(path, ["full=240x120,png", "small=120x60,jpeg,q90", "web=120x60,webp,q80"])
        let full = made.output("full")
        #expect(full.encoding.size == PixelSize(width: 240, height: 120))
        let reading = try ToneMapOracle.read(
            output: directory.write("full.png", full.data), original: path, container: original.container,
            transfer: original.transfer, bits: original.bits)

        // The whole picture is the oracle's, within the rounding of two decoders.
        #expect(reading.meanError <= 1 && reading.p99Error <= 3, "\(original): \(reading)")
        // Midtones and colours keep the scene's light (BT.709's colours through BT.2020 and back).
        #expect(reading.midtoneError <= 2 && reading.colourError <= 3, "\(original): \(reading)")
        // Highlights from SDR white to 1,000 cd/m² rise step by step, bright, and reach 255 only at the top.
        let steps = reading.highlightSteps
        #expect(steps.count == 8 && zip(steps, steps.dropFirst()).allSatisfy { $0 < $1 }, "\(original): \(steps)")
        #expect((steps.first ?? 0) >= 220 && reading.clippedShare <= 0.08, "\(original): \(reading)")

        // The manifest says what the original was and that its HDR is not in the variants.
        let gainMap = try #require(made.gainMap, "\(original)")
        #expect(gainMap.kind == (original.transfer == 16 ? .pq : .hlg) && !gainMap.carried && gainMap.reasonCode == .toneMapped)
        let headroom = try #require(gainMap.headroom)
        #expect(abs(headroom - reading.sourcePeak / 203) <= 0.05 * headroom, "\(headroom) against \(reading.sourcePeak) cd/m²")
        #expect(made.variants.allSatisfy { $0.encoding.hdrHeadroom == nil })
    }

    @Test func theSmallerVariantsAreResizedFromTheToneMappedPicture() throws {
        let path = directory.url("original.heic")
        try ToneMapOracle.encode(path, container: "heic", transfer: 16, bits: 10)
        let made = try compress(path, ["full=240x120,png", "half=120x60,png"], hdr: .drop)
        // The highlight band's middle, in the full variant and at half its size: the same light.
        let fullLevel = Self.meanLevel(try VipsProbe.decode(made.output("full").data), x: 60, y: 50, width: 120, height: 20)
        let halfLevel = Self.meanLevel(try VipsProbe.decode(made.output("half").data), x: 30, y: 25, width: 60, height: 10)
        #expect(abs(fullLevel - halfLevel) <= 1.5 && fullLevel > 235, "\(fullLevel) and \(halfLevel)")
        #expect(made.gainMap?.reasonCode == .toneMapped)
    }

    @Test func anSDRHEICIsNoHDROriginal() throws {
        let made = try compress(Fixtures.repository + "/fixtures/images/formats/landscape-heic.heic", ["fit=200x200,jpeg,q80"])
        #expect(made.gainMap == nil)
    }

    static func meanLevel(_ image: VipsProbe.Image, x: Int, y: Int, width: Int, height: Int) -> Double {
        var sum = 0.0
        for row in y..<(y + height) {
            for column in x..<(x + width) { sum += image.pixel(x: column, y: row).prefix(3).reduce(0, +) / 3 }
        }
        return sum / Double(width * height)
    }
}
