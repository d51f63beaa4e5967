// ResizePlan against libvips itself: the sizes imagepipe plans are the sizes libvips' thumbnail makes.
import ImagePipe
import ImagePipeTestSupport
import ImagePipeVipsTestSupport
import Testing

/// `ResizePlan` models libvips' rounding to plan one decode for every variant. Its own tests check it
/// against that model; these ask libvips (on black images, whose pixels are never computed) for the
/// sizes the compressor's calls make, over awkward and random source sizes.
@Suite struct ResizePlanOracleTests {
    static let banner = VariantSpec(name: "banner", width: 1200, height: 400, fit: .cover, format: .jpeg, quality: 80)
    static let strip = VariantSpec(name: "strip", width: 962, height: 40, fit: .inside, format: .jpeg, quality: 80)
    static let column = VariantSpec(name: "column", width: 30, height: 900, fit: .inside, format: .webp, quality: 80)
    static let variantSets: [[VariantSpec]] = [
        Preset.web, Preset.web + [banner], [Preset.web[0], strip, Preset.web[2]], [Preset.web[0], column, strip],
    ]

    func size(_ width: Int, _ height: Int) -> PixelSize { PixelSize(width: width, height: height) }

    func sources(using generator: inout SeededRandom) -> [PixelSize] {
        var sources = [
            size(4000, 3000), size(3000, 4000), size(6000, 4000), size(1999, 1333), size(20000, 700), size(333, 999),
            size(2049, 2047), size(641, 321), size(12000, 500), size(1, 1), size(1, 5000), size(5000, 1), size(319, 320),
            // Exact ties, 30 px wide: 82.5 px tall (libvips makes 82) and 727.5 (it makes 728).
            size(3628, 9977), size(624, 15132),
            // An exact tie of a shared decode, 2049 px high: 1707.5 px wide (libvips makes 1708).
            size(2545, 3054),
        ]
        for _ in 0..<300 {
            let long = Int.random(in: 1...30000, using: &generator), short = Int.random(in: 1...9000, using: &generator)
            sources.append(Bool.random(using: &generator) ? size(long, short) : size(short, long))
        }
        return sources
    }

    /// Whether fitting `source` to `side` px along its limiting side makes the other side an exact
    /// half in exact arithmetic (82.5 px). libvips shrinks by a whole factor before it reduces by the
    /// rest, and at such a tie that first shrink decides which way the last pixel goes (3628x9977 and
    /// 624x15132 go opposite ways at 30 px wide): the plan may be one pixel off there, and only there.
    static func isTie(_ source: PixelSize, fittedTo side: Int, byWidth: Bool) -> Bool {
        let (limiting, other) = byWidth ? (source.width, source.height) : (source.height, source.width)
        return (2 * other * side) % (2 * limiting) == limiting
    }

    /// `made` is `planned`, or one pixel off along the other side at an exact tie.
    static func agrees(_ made: PixelSize, _ planned: PixelSize, source: PixelSize, byWidth: Bool) -> Bool {
        if made == planned { return true }
        let side = byWidth ? planned.width : planned.height
        guard isTie(source, fittedTo: side, byWidth: byWidth) else { return false }
        return byWidth
            ? made.width == planned.width && abs(made.height - planned.height) == 1
            : made.height == planned.height && abs(made.width - planned.width) == 1
    }

    @Test func eachVariantAloneComesOutAtItsPlannedSize() throws {
        var generator = SeededRandom.fromEnvironment()
        let seed = generator.seed
        let every = Dictionary(Self.variantSets.joined().map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first }).values
        for source in sources(using: &generator) {
            // Fits only: libvips computes a crop's whole input into memory first (a 30000x9000 one is
            // 800 MB), and a crop's size is the box, or imagepipe's own rule for a smaller source,
            // which the compressor test below checks on real images.
            for variant in every.sorted(by: { $0.name < $1.name }) where variant.fit == .inside {
                // One variant: decoded straight to its own size, as the compressor does.
                let planned = ResizePlan(source: source, variants: [variant]).outputs[0]
                let byWidth = ResizePlan.fitsByWidth(source, variant.box)
                let box = VipsProbe.compressorBox(for: planned, byWidth: byWidth, crop: false)
                let made = try VipsProbe.thumbnailSize(of: source, box: box, crop: false)
                #expect(
                    Self.agrees(made, planned, source: source, byWidth: byWidth),
                    "\(source) \(variant.name): libvips made \(made), planned \(planned) (IMAGEPIPE_TEST_SEED=\(seed))")
                // libvips asked for the variant's whole box agrees on what fits inside it.
                let whole = try VipsProbe.thumbnailSize(of: source, box: (Int32(variant.width), Int32(variant.height)), crop: false)
                #expect(
                    Self.agrees(whole, planned, source: source, byWidth: byWidth),
                    "\(source) \(variant.name) in its box: libvips made \(whole), planned \(planned) (IMAGEPIPE_TEST_SEED=\(seed))")
            }
        }
    }

    @Test func theSharedDecodeIsTheSizeLibvipsMakes() throws {
        var generator = SeededRandom.fromEnvironment()
        let seed = generator.seed
        for source in sources(using: &generator) {
            for variants in Self.variantSets {
                let plan = ResizePlan(source: source, variants: variants)
                let box = VipsProbe.compressorBox(for: plan.decodeSize, byWidth: plan.decodesByWidth, crop: false)
                let decoded = try VipsProbe.thumbnailSize(of: source, box: box, crop: false)
                // At an exact tie the decode may be a pixel off along the other side (2545x3054 fitted
                // to 2049 px high is 1707.5 px wide; libvips makes 1708), as ``agrees`` allows.
                #expect(
                    Self.agrees(decoded, plan.decodeSize, source: source, byWidth: plan.decodesByWidth),
                    "\(source): decoded at \(decoded), planned \(plan.decodeSize) (IMAGEPIPE_TEST_SEED=\(seed))")
                for output in plan.outputs {
                    // Only a tie's decode a pixel short may fall short of an output: the compressor then
                    // resizes it up to its planned size, by that pixel.
                    #expect(
                        (decoded.width >= output.width && decoded.height >= output.height) || decoded != plan.decodeSize,
                        "\(source): \(decoded) cannot serve \(output) (IMAGEPIPE_TEST_SEED=\(seed))")
                }
            }
        }
    }

    /// The compressor on real JPEGs of sizes where a shared decode is a few pixels off the variants'
    /// own scale: each variant comes out at the size it has when made alone, and as planned.
    @Test(arguments: [(12000, 500), (2051, 307), (4999, 3331)])
    func aVariantsSizeDoesNotDependOnTheOthers(_ width: Int, _ height: Int) throws {
        let source = size(width, height)
        let jpeg = try VipsProbe.blackJPEG(source)
        var aloneSizes: [String: PixelSize] = [:]
        for variants in Self.variantSets {
            let together = try Fixtures.compress(bytes: jpeg, variants)
            let plan = ResizePlan(source: source, variants: variants)
            for (variant, output) in zip(variants, plan.outputs) {
                if aloneSizes[variant.name] == nil {
                    aloneSizes[variant.name] = try Fixtures.compress(bytes: jpeg, [variant]).variants[0].encoding.size
                }
                let alone = aloneSizes[variant.name]!
                let made = together.output(variant.name)
                let decoded = try VipsProbe.info(made.data)
                #expect(
                    made.encoding.size == output && decoded.width == output.width && decoded.height == output.height,
                    "\(source) \(variant.name): \(made.encoding.size), planned \(output)")
                #expect(alone == output, "\(source) \(variant.name) alone: \(alone), planned \(output)")
            }
        }
    }
}
