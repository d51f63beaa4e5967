// Benchmarks of the compression hot path on real photos: decode once versus per variant, each format,
// EXIF orientation, PNG with alpha. The workloads themselves live in ImagePipeVips.
import Benchmark
import Foundation
import ImagePipe
import ImagePipeVips

/// The repository's fixtures, found from this file.
private let fixtures: String = {
    var url = URL(fileURLWithPath: #filePath)
    while url.path != "/" {
        url.deleteLastPathComponent()
        if FileManager.default.fileExists(atPath: url.path + "/fixtures/README.md") { return url.path + "/fixtures" }
    }
    fatalError("fixtures/ not found above \(#filePath)")
}()

private func fixture(_ relative: String) -> Data {
    try! Data(contentsOf: URL(fileURLWithPath: fixtures + "/" + relative))
}

private let photo = fixture("images/exif-orientation/Landscape_1.jpg")
private let rotatedPhoto = fixture("images/exif-orientation/Landscape_6.jpg")
private let alphaPNG = fixture("images/formats/alpha.png")
private let compressor: VipsCompressor = {
    // One image at a time here, so libvips may use every core for it.
    try! Vips.configure(threadsPerImage: ProcessInfo.processInfo.activeProcessorCount)
    return try! VipsCompressor()
}()

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .peakMemoryResident, .mallocCountTotal],
        warmupIterations: 2,
        scalingFactor: .one,
        maxDuration: .seconds(5),
        maxIterations: 40,
        thresholds: [
            // Shared machines are noisy: only a clear regression should fail the check.
            .wallClock: .init(relative: [.p50: 25, .p90: 35]),
            .peakMemoryResident: .init(relative: [.p90: 20]),
            .mallocCountTotal: .init(relative: [.p90: 10]),
        ]
    )

    func register(_ name: String, _ workload: CompressionWorkload, _ source: Data) {
        Benchmark(name) { benchmark in
            for _ in benchmark.scaledIterations {
                blackHole(try workload.run(source, compressor: compressor))
            }
        }
    }

    register("Web preset, decode once (1800x1200 JPEG)", .decodeOnceWebPreset, photo)
    register("Web preset, decode per variant (1800x1200 JPEG)", .independentDecodesWebPreset, photo)
    register("Web preset, decode once, EXIF orientation 6", .decodeOnceWebPreset, rotatedPhoto)
    register("JPEG 1600", .jpeg1600, photo)
    register("WebP 1600", .webp1600, photo)
    register("AVIF 1600", .avif1600, photo)
    register("PNG 1600", .png1600, photo)
    register("Thumbnail 320 cover", .thumbnail320, photo)
    register("Web preset, PNG with alpha", .decodeOnceWebPreset, alphaPNG)
}
