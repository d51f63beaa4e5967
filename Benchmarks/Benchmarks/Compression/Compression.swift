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
            // Shared machines are noisy (±40% between runs at p90): only a clear regression, such as
            // decoding once per variant again (+65%), should fail the check.
            .wallClock: .init(relative: [.p90: 50]),
            // Throughput is counted in whole images per second, too coarse at 3–25/s to check;
            // wall clock stands for it.
            .throughput: .init(relative: [.p90: 100]),
            .peakMemoryResident: .init(relative: [.p90: 20]),
            .mallocCountTotal: .init(relative: [.p90: 10]),
        ]
    )

    // Names without spaces or slashes: the plugin writes threshold files with those replaced but
    // looks them up by the name as given.
    func register(_ name: String, _ workload: CompressionWorkload, _ source: Data) {
        Benchmark(name) { benchmark in
            for _ in benchmark.scaledIterations {
                blackHole(try workload.run(source, compressor: compressor))
            }
        }
    }

    register("web-preset-decode-once-jpeg-1800x1200", .decodeOnceWebPreset, photo)
    register("web-preset-decode-per-variant-jpeg-1800x1200", .independentDecodesWebPreset, photo)
    register("web-preset-decode-once-exif-orientation-6", .decodeOnceWebPreset, rotatedPhoto)
    register("jpeg-1600", .jpeg1600, photo)
    register("webp-1600", .webp1600, photo)
    register("avif-1600", .avif1600, photo)
    register("png-1600", .png1600, photo)
    register("thumbnail-320-cover", .thumbnail320, photo)
    register("web-preset-png-with-alpha", .decodeOnceWebPreset, alphaPNG)
}
