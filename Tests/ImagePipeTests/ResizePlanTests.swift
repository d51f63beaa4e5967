import ImagePipe
import ImagePipeTestSupport
import Testing

@Suite struct ResizePlanTests {
    func size(_ w: Int, _ h: Int) -> PixelSize { PixelSize(width: w, height: h) }
    let large = Preset.web[0], medium = Preset.web[1], thumb = Preset.web[2]

    @Test func insideFitsTheBoxKeepingAspect() {
        #expect(ResizePlan.outputSize(source: size(4000, 3000), variant: large) == size(2048, 1536))
        #expect(ResizePlan.outputSize(source: size(3000, 4000), variant: medium) == size(768, 1024))
        #expect(ResizePlan.outputSize(source: size(8000, 800), variant: large) == size(2048, 205))
    }

    @Test func neverEnlarges() {
        #expect(ResizePlan.outputSize(source: size(40, 30), variant: large) == size(40, 30))
        #expect(ResizePlan.outputSize(source: size(40, 30), variant: thumb) == size(30, 30))
    }

    @Test func coverKeepsTheBoxAspectAndShrinksTheBoxForSmallSources() {
        #expect(ResizePlan.outputSize(source: size(4000, 3000), variant: thumb) == size(320, 320))
        #expect(ResizePlan.outputSize(source: size(400, 300), variant: thumb) == size(300, 300))
        #expect(ResizePlan.outputSize(source: size(3600, 200), variant: thumb) == size(200, 200))
        let wide = VariantSpec(name: "banner", width: 1200, height: 400, fit: .cover, format: .jpeg, quality: 80)
        #expect(ResizePlan.outputSize(source: size(600, 600), variant: wide) == size(600, 200))
        #expect(ResizePlan.outputSize(source: size(900, 300), variant: wide) == size(900, 300))
    }

    @Test func decodesOnceAtTheSizeTheLargestVariantNeeds() {
        // Exactly the large variant's size, not 2048x1366 from rounding 1365.33 up: that decode
        // needed a second resize, by a pixel, to make the large variant.
        let plan = ResizePlan(source: size(6000, 4000), variants: Preset.web)
        #expect(plan.outputs == [size(2048, 1365), size(1024, 683), size(320, 320)])
        #expect(plan.decodeSize == size(2048, 1365) && plan.decodesByWidth)
        let portrait = ResizePlan(source: size(3172, 5640), variants: Preset.web)
        #expect(portrait.decodeSize == portrait.outputs[0] && !portrait.decodesByWidth)
        // A panorama's square thumbnail needs more height than its large variant.
        let panorama = ResizePlan(source: size(20000, 1000), variants: Preset.web)
        #expect(panorama.outputs[0] == size(2048, 102))
        #expect(panorama.decodeSize == size(6400, 320))
        // Never larger than the source, whatever the rounding.
        #expect(ResizePlan(source: size(300, 200), variants: Preset.web).decodeSize == size(300, 200))
    }

    @Test func aPanoramasStripIsNotMadeFromADecodeWhoseShortSideWasRounded() {
        // 12000x500 at 2048 px wide is 85.33 px high; a 962x40 strip fitted by its height from a
        // 2048x85 decode would be 964 px wide. So the decode keeps a common scale instead.
        let strip = VariantSpec(name: "strip", width: 962, height: 40, fit: .inside, format: .jpeg, quality: 80)
        let plan = ResizePlan(source: size(12000, 500), variants: [Preset.web[0], strip])
        #expect(plan.outputs == [size(2048, 85), size(960, 40)])
        #expect(plan.decodeSize != plan.outputs[0])
        #expect(ResizePlan.resized(size(2048, 85), to: size(960, 40), byWidth: false) == size(964, 40))
    }

    @Test func everyVariantComesOutAtItsSizeFromTheDecode() {
        let banner = VariantSpec(name: "banner", width: 1200, height: 400, fit: .cover, format: .jpeg, quality: 80)
        let strip = VariantSpec(name: "strip", width: 962, height: 40, fit: .inside, format: .jpeg, quality: 80)
        let column = VariantSpec(name: "column", width: 30, height: 900, fit: .inside, format: .webp, quality: 80)
        var sources = [(4000, 3000), (3000, 4000), (1999, 1333), (20000, 700), (333, 999), (2049, 2047), (641, 321), (12000, 500)]
        var generator = SeededRandom(seed: 14)
        for _ in 0..<3000 {
            let long = Int.random(in: 1...30000, using: &generator), short = Int.random(in: 1...9000, using: &generator)
            sources.append(Bool.random(using: &generator) ? (long, short) : (short, long))
        }
        for (w, h) in sources {
            for variants in [Preset.web, Preset.web + [banner], [Preset.web[0], strip, Preset.web[2]], [Preset.web[0], column, strip]] {
                let plan = ResizePlan(source: size(w, h), variants: variants)
                // The decode reached by its side, the other following the aspect ratio as libvips rounds it.
                let decoded = ResizePlan.resized(size(w, h), to: plan.decodeSize, byWidth: plan.decodesByWidth)
                let exact = plan.decodeSize == plan.outputs[0]
                for (variant, output) in zip(variants, plan.outputs) {
                    // A crop is made from the whole decode, so covering its output is all it needs.
                    #expect(decoded.width >= output.width && decoded.height >= output.height, "\(w)x\(h) \(variant.name)")
                    guard variant.fit == .inside else { continue }
                    let made = ResizePlan.resized(decoded, to: output, byWidth: ResizePlan.fitsByWidth(size(w, h), variant.box))
                    // From the largest variant's own size, exactly; from a common scale, within the
                    // pixel a second rounding can cost.
                    if exact {
                        #expect(made == output, "\(w)x\(h) \(variant.name): \(made), planned \(output)")
                    } else {
                        #expect(abs(made.width - output.width) <= 1 && abs(made.height - output.height) <= 1, "\(w)x\(h) \(variant.name)")
                    }
                    #expect(
                        made.width <= max(variant.width, output.width) && made.height <= max(variant.height, output.height),
                        "\(w)x\(h) \(variant.name)")
                }
            }
        }
    }
}
