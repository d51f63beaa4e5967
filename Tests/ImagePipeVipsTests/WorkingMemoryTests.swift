import Foundation
import ImagePipeTestSupport
import ImagePipe
@testable import ImagePipeVips
import ImagePipeVipsTestSupport
import Testing

@Suite struct WorkingMemoryTests {
    @Test func workingMemoryCountsWhatEachFormatHolds() throws {
        let small = [Fixtures.variant("a=100x100,jpeg,q80")]
        // One variant: its pixels in memory (4 bytes per pixel at most) and the encoder's buffers.
        let encoder = 100 * 67 * 4 + 100 * 67 * 6
        // Progressive 600x400 4:2:0: luma plus two quarter-size chroma planes, 2 bytes per coefficient.
        let progressive = Fixtures.data("images/formats/progressive.jpg")
        #expect(try VipsProbe.workingMemory(progressive, variants: small) == progressive.count + 600 * 400 * 3 + encoder)
        // Baseline JPEGs decode in strips: only the source and the output count.
        let baseline = Fixtures.data("images/formats/landscape.jpg")
        #expect(try VipsProbe.workingMemory(baseline, variants: small) == baseline.count + encoder)
        // WebP decodes whole; several variants add the in-memory intermediate and the largest encoder.
        let webp = Fixtures.data("images/formats/landscape-webp.webp")
        #expect(try VipsProbe.workingMemory(webp, variants: Preset.web) == webp.count + 600 * 400 * 3 + 600 * 400 * 4 + 600 * 400 * 6)
    }
}
