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
        let plan = ResizePlan(source: size(6000, 4000), variants: Preset.web)
        #expect(plan.decodeSize == size(2048, 1366))
        #expect(plan.outputs == [size(2048, 1365), size(1024, 683), size(320, 320)])
        // A panorama's square thumbnail needs more height than its large variant.
        let panorama = ResizePlan(source: size(20000, 1000), variants: Preset.web)
        #expect(panorama.outputs[0] == size(2048, 102))
        #expect(panorama.decodeSize == size(6400, 320))
        // Never larger than the source, whatever the rounding.
        #expect(ResizePlan(source: size(300, 200), variants: Preset.web).decodeSize == size(300, 200))
    }

    @Test func decodeSizeCoversEveryVariant() {
        for (w, h) in [(4000, 3000), (3000, 4000), (1999, 1333), (20000, 700), (333, 999), (2049, 2047), (641, 321)] {
            let plan = ResizePlan(source: size(w, h), variants: Preset.web)
            for output in plan.outputs {
                #expect(plan.decodeSize.width >= output.width && plan.decodeSize.height >= output.height, "\(w)x\(h)")
            }
        }
    }
}
