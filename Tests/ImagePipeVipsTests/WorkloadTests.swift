import Foundation
import ImagePipeTestSupport
import ImagePipe
import ImagePipeVips
import ImagePipeVipsTesting
import Testing

/// The benchmark workloads, run on small fixtures: what the benchmarks measure must work.
@Suite struct WorkloadTests {
    @Test(arguments: CompressionWorkload.allCases)
    func everyWorkloadProducesItsVariants(_ workload: CompressionWorkload) throws {
        let outputs = try workload.run(Fixtures.data("images/formats/landscape.jpg"), compressor: Fixtures.compressor)
        #expect(outputs.map(\.spec) == workload.variants)
        for output in outputs {
            let info = try VipsProbe.info(output.data)
            #expect(PixelSize(width: info.width, height: info.height) == output.size)
        }
    }

    @Test func decodingOnceGivesTheSameVariantsAsDecodingPerVariant() throws {
        let source = Fixtures.data("images/exif-orientation/Landscape_6.jpg")
        let once = try CompressionWorkload.decodeOnceWebPreset.run(source, compressor: Fixtures.compressor)
        let separately = try CompressionWorkload.independentDecodesWebPreset.run(source, compressor: Fixtures.compressor)
        #expect(once.map(\.size) == separately.map(\.size))
        for (a, b) in zip(once, separately) {
            let difference = try #require(try VipsProbe.decode(a.data).meanAbsoluteDifference(to: VipsProbe.decode(b.data)))
            #expect(difference < 3, "\(a.spec.name) differs by \(difference) between the two paths")
        }
    }
}
