import ImagePipe
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

    @Test func decodeSizeCoversEveryVariant() {
        let banner = VariantSpec(name: "banner", width: 1200, height: 400, fit: .cover, format: .jpeg, quality: 80)
        var sources = [(4000, 3000), (3000, 4000), (1999, 1333), (20000, 700), (333, 999), (2049, 2047), (641, 321)]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 { sources.append((Int.random(in: 1...9000, using: &generator), Int.random(in: 1...9000, using: &generator))) }
        for (w, h) in sources {
            for variants in [Preset.web, Preset.web + [banner]] {
                let plan = ResizePlan(source: size(w, h), variants: variants)
                // The decode reached by its side, the other following the aspect ratio as libvips rounds it.
                let scale = plan.decodesByWidth ? Double(plan.decodeSize.width) / Double(w) : Double(plan.decodeSize.height) / Double(h)
                let decoded = PixelSize(
                    width: plan.decodesByWidth ? plan.decodeSize.width : max(1, Int((Double(w) * scale).rounded())),
                    height: plan.decodesByWidth ? max(1, Int((Double(h) * scale).rounded())) : plan.decodeSize.height)
                // A crop is made from the whole decode, so covering its output is all it needs too.
                for (variant, output) in zip(variants, plan.outputs) {
                    #expect(decoded.width >= output.width && decoded.height >= output.height, "\(w)x\(h) \(variant.name)")
                }
            }
        }
    }
}
