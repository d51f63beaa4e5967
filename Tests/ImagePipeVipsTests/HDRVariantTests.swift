// HDR originals' JPEG variants as Ultra HDR JPEGs, read back by libultrahdr and compared with the source through their geometry.
import Foundation
import ImagePipe
import ImagePipeTestSupport
import ImagePipeVips
import Testing

/// Ultra HDR JPEGs made by libultrahdr (at several headrooms, turned by EXIF orientations) and an
/// iPhone's HEIC, through the compressor: every JPEG variant decodes to HDR in libultrahdr, its HDR
/// matches the source's through the variant's resize and crop, its SDR picture is exactly the
/// `--hdr drop` variant's, and the other formats stay SDR.
@Suite struct HDRVariantTests {
    let directory = TemporaryDirectory(prefix: "imagepipe-hdr-variants")

    /// The variants made of each source: a fit, centred and compass crops, and a WebP.
    static let specs = [
        "fit=300x300,jpeg,q90", "square=160x160,jpeg,q90,cover", "north=200x100,jpeg,q90,cover,north", "web=200x200,webp,q80",
    ]

    /// Stops the HDR of a variant may be off the source's through the same geometry, on average and
    /// at the 95th percentile: the gain map at half the variant's size and JPEG at q85 blur the square's
    /// edges; the rest is within a few hundredths of a stop.
    static let meanStops = 0.08
    static let p95Stops = 0.4

    func compress(_ path: String, _ specs: [String], focus: FocalPoint? = nil, hdr: HDRPolicy = .keep) throws -> CompressedImage {
        let variants = specs.map { Fixtures.variant($0).applying(hdr: hdr) }
        let source = SourceImage(name: path, content: .bytes(try Data(contentsOf: URL(fileURLWithPath: path))), focus: focus)
        return try Fixtures.compressor.compress(source, variants: variants, limits: .default)
    }

    /// Every JPEG variant of `path` with its `--hdr drop` twin, compared by the oracle.
    func check(
        _ path: String, orientation: Int, displayed: (width: Int, height: Int), specs: [String], focus: FocalPoint? = nil
    ) throws
        -> CompressedImage
    {
        let kept = try compress(path, specs, focus: focus)
        let dropped = try compress(path, specs, focus: focus, hdr: .drop)
        #expect(kept.gainMap?.carried == true && kept.gainMap?.kind == .ultraHDRJPEG, "\(String(describing: kept.gainMap))")
        #expect(dropped.gainMap?.carried == false && dropped.gainMap?.reasonCode == .dropped)
        var items: [HDROracle.Item] = []
        for (made, twin) in zip(kept.variants, dropped.variants) {
            #expect(twin.encoding.hdrHeadroom == nil)
            guard made.spec.format == .jpeg else {
                #expect(made.encoding.hdrHeadroom == nil, "\(made.spec.name) is SDR")
                #expect(made.data == twin.data, "\(made.spec.name) is as with --hdr drop")
                continue
            }
            #expect(made.encoding.hdrHeadroom != nil, "\(made.spec.name)")
            let output = (width: made.encoding.size.width, height: made.encoding.size.height)
            let fraction: HDROracle.Fraction =
                made.spec.fit == .inside
                ? .whole
                : .cover(
                    source: displayed, output: output, fx: focus?.x ?? 0.5,
                    fy: focus?.y ?? (made.spec.crop == .north ? 0 : 0.5))
            items.append(
                HDROracle.Item(
                    output: directory.write("\(made.spec.name).jpg", made.data), source: path, orientation: orientation, fraction: fraction,
                    dropped: directory.write("\(made.spec.name)-drop.jpg", twin.data)))
        }
        for (item, found) in zip(items, try HDROracle.compare(items)) {
            let name = URL(fileURLWithPath: item.output).lastPathComponent
            #expect(found.isUltraHDR, "\(name): libultrahdr reads no gain map")
            #expect(found.meanStops <= Self.meanStops && found.p95Stops <= Self.p95Stops, "\(name): \(found)")
            // The brightest of the picture is as bright as the source's there.
            #expect(abs(log2(found.peak / found.sourcePeak)) <= 0.15, "\(name): \(found)")
            #expect(found.sameSDR == true, "\(name): the SDR picture differs from --hdr drop's")
            #expect(found.dropIsUltraHDR == false, "\(name): --hdr drop kept the gain map")
        }
        return kept
    }

    @Test(arguments: [2.0, 4.0, 8.0])
    func ultraHDRSourcesAtSeveralHeadroomsGiveUltraHDRVariants(peak: Double) throws {
        let path = directory.url("peak-\(peak).jpg")
        try HDROracle.encode(path, width: 600, height: 400, peak: peak)
        let kept = try check(path, orientation: 1, displayed: (600, 400), specs: Self.specs)
        // The headroom recorded is the source's metadata's, the same for every variant.
        let headrooms = Set(kept.variants.compactMap(\.encoding.hdrHeadroom))
        #expect(headrooms.count == 1 && headrooms.first.map { $0 > 1 } == true, "\(headrooms)")
        #expect(kept.gainMap?.headroom == headrooms.first)
    }

    @Test(arguments: [3, 6, 8])
    func theGainMapTurnsWithThePictureByItsEXIFOrientation(orientation: Int) throws {
        let path = directory.url("oriented-\(orientation).jpg")
        try HDROracle.encode(path, width: 600, height: 400, peak: 4, orientation: orientation)
        let displayed = orientation >= 5 ? (400, 600) : (600, 400)
        let kept = try check(path, orientation: orientation, displayed: displayed, specs: Self.specs)
        #expect(kept.sourceSize == PixelSize(width: displayed.0, height: displayed.1))
    }

    @Test func aCoverCropAtAFocalPointTakesTheGainMapFromTheSamePlace() throws {
        let path = directory.url("source.jpg")
        try HDROracle.encode(path, width: 600, height: 400, peak: 4, orientation: 6)
        // Near the square (a sixth in, a fifth down, stored; turned, it is at the right, near the top).
        _ = try check(
            path, orientation: 6, displayed: (400, 600), specs: ["focus=120x120,jpeg,q90,cover", "wide=240x80,jpeg,q90,cover"],
            focus: FocalPoint(x: 0.7, y: 0.25))
    }

    @Test func theIPhonesGainMapIsCarriedWithTheHeadroomOfItsMakerNote() throws {
        let path = Fixtures.repository + "/fixtures/images/hdr/iphone-13-pro-max.heic"
        let focus = try #require(FocalPoint(x: 0.3, y: 0.6))
        let kept = try compress(path, ["fit=800x800,jpeg,q85", "crop=300x200,jpeg,q85,cover", "web=400x400,webp,q80"], focus: focus)
        let dropped = try compress(path, ["fit=800x800,jpeg,q85", "crop=300x200,jpeg,q85,cover", "web=400x400,webp,q80"], focus: focus, hdr: .drop)
        // HDRHeadroom 0.8432090282, HDRGain 0.008020164442: 1.8 - 20 * HDRGain stops.
        let headroom = exp2(1.8 - 20 * 0.008020164442)
        #expect(kept.gainMap?.kind == .appleHEIC && kept.gainMap?.carried == true)
        #expect(abs((kept.gainMap?.headroom ?? 0) - headroom) < 1e-6)
        #expect(kept.output("web").encoding.hdrHeadroom == nil && kept.output("web").data == dropped.output("web").data)
        let displayed = (width: 3024, height: 4032)
        var items: [HDROracle.Item] = []
        for name in ["fit", "crop"] {
            let made = kept.output(name)
            #expect(abs((made.encoding.hdrHeadroom ?? 0) - headroom) < 1e-6, "\(name)")
            let fraction: HDROracle.Fraction =
                name == "fit"
                ? .whole : .cover(source: displayed, output: (made.encoding.size.width, made.encoding.size.height), fx: focus.x, fy: focus.y)
            items.append(
                HDROracle.Item(
                    output: directory.write("\(name).jpg", made.data), source: path, fraction: fraction,
                    dropped: directory.write("\(name)-drop.jpg", dropped.output(name).data)))
        }
        for (item, (found, mapSize)) in zip(items, try HDROracle.compareApple(items, headroom: headroom)) {
            let name = URL(fileURLWithPath: item.output).lastPathComponent
            #expect(found.isUltraHDR, "\(name): libultrahdr reads no gain map")
            // The remapped map boosts as Apple's does, through the same geometry.
            #expect(found.meanStops <= 0.05 && found.p95Stops <= 0.2, "\(name): \(found)")
            // libultrahdr applies the headroom the maker note gives, no more.
            #expect(found.peak <= headroom * 1.05 && found.peak >= found.sourcePeak * 0.9, "\(name): \(found)")
            let made = kept.output(name == "fit.jpg" ? "fit" : "crop")
            #expect(mapSize == [(made.encoding.size.width + 1) / 2, (made.encoding.size.height + 1) / 2], "\(name): \(mapSize)")
        }
        // The SDR pictures are exactly the --hdr drop variants'.
        for (item, found) in zip(
            items, try HDROracle.compare(items.map { HDROracle.Item(output: $0.output, source: $0.output, dropped: $0.dropped) }))
        {
            #expect(found.sameSDR == true, "\(item.output)")
        }
    }
}
