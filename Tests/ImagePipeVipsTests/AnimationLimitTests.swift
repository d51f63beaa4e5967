// The frame budget: an animation whose frames would be too many or too large to decode is refused from its header.
import Foundation
import ImagePipe
import ImagePipeTestSupport
import ImagePipeVips
import ImagePipeVipsTestSupport
import Testing

@Suite struct AnimationLimitTests {
    static let moving = [Fixtures.variant("m=100x100,webp,q75")]

    /// 400 frames on a 2000x2000 canvas: 4 megapixels a frame, within --max-pixels, but 1.6
    /// gigapixels (6.4 GB) all decoded. Coming back at all shows nothing was decoded.
    @Test func framesTimesCanvasOverThePixelBudgetIsRefused() throws {
        let gif = ManyFrameGIF.make(frames: 400, width: 2000, height: 2000)
        let error = try #require(throws: ImagePipeError.self) { try Fixtures.compress(bytes: gif, Self.moving) }
        #expect(error.code == .imageTooLarge)
        #expect(error.reason.contains("400 frames of 2000x2000") && error.reason.contains("1600.0 megapixels"), "\(error.reason)")
        #expect(error.reason.contains("--max-pixels"), "\(error.reason)")
    }

    /// 1500 frames of 4x4: within the pixel budget, over the default --max-frames.
    @Test func tooManyFramesAreRefused() throws {
        let gif = ManyFrameGIF.make(frames: 1500, width: 4, height: 4)
        let error = try #require(throws: ImagePipeError.self) { try Fixtures.compress(bytes: gif, Self.moving) }
        #expect(error.code == .imageTooLarge)
        #expect(error.reason.contains("1500 frames of 4x4") && error.reason.contains("--max-frames"), "\(error.reason)")
        // A limit raised lets it through, every frame kept.
        let compressed = try Fixtures.compressor.compress(
            SourceImage(name: "many.gif", content: .bytes(gif)), variants: Self.moving,
            limits: CompressionLimits(maxPixels: 100_000_000, maxFrames: 2000))
        #expect(compressed.variants[0].encoding.frames == 1500)
    }

    /// Variants that take the first frame decode one frame only, so the budget does not apply.
    @Test func stillVariantsOfAHugeAnimationAreMade() throws {
        let gif = ManyFrameGIF.make(frames: 400, width: 2000, height: 2000)
        let compressed = try Fixtures.compress(bytes: gif, [Fixtures.variant("j=100x100,jpeg,q75"), Fixtures.variant("s=100x100,webp,q75,still")])
        #expect(compressed.variants.map(\.encoding.frames) == [1, 1])
    }

    /// The hostile animated fixtures are still refused before decoding, by their canvas alone.
    @Test(arguments: ["hostile/bomb-animated.webp", "hostile/bomb.gif"])
    func hostileAnimationsAreRefused(relative: String) throws {
        let error = try #require(throws: ImagePipeError.self) { try Fixtures.compress(relative, Self.moving) }
        #expect(error.code == .imageTooLarge && error.reason.contains("--max-pixels"), "\(error.reason)")
    }

    /// The working memory counts every frame, decoded and as the encoder holds them; the same
    /// animation made still needs one frame's.
    @Test func workingMemoryCountsEveryFrame() throws {
        let few = ManyFrameGIF.make(frames: 10, width: 1000, height: 1000)
        let many = ManyFrameGIF.make(frames: 40, width: 1000, height: 1000)
        let fewBytes = try VipsProbe.workingMemory(few, variants: Self.moving)
        let manyBytes = try VipsProbe.workingMemory(many, variants: Self.moving)
        #expect(fewBytes >= 10 * 1_000_000 * 4 && manyBytes >= 40 * 1_000_000 * 4, "\(fewBytes) \(manyBytes)")
        #expect(manyBytes - fewBytes >= 30 * 1_000_000 * 4)
        let still = try VipsProbe.workingMemory(many, variants: [Fixtures.variant("m=100x100,webp,q75,still")])
        #expect(still < 2 * 1_000_000 * 4 + many.count, "\(still)")
    }
}
