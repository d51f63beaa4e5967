// swift-tools-version: 6.1
// The compression hot-path benchmarks, kept out of the main package so `make test` never builds them.
import Foundation
import PackageDescription

// A path dependency is known by its folder's name, which is whatever the checkout is called.
let imagepipe = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .lastPathComponent.lowercased()

let package = Package(
    name: "imagepipe-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        // libvips for the plain reference each benchmark's CPU time is divided by.
        .systemLibrary(name: "CLibVipsPlain", path: "Benchmarks/CLibVipsPlain", pkgConfig: "vips", providers: [.apt(["libvips-dev"])]),
        .target(name: "PlainLibvips", dependencies: ["CLibVipsPlain"], path: "Benchmarks/PlainLibvips"),
        .executableTarget(
            name: "Compression",
            dependencies: [
                .product(name: "ImagePipe", package: imagepipe),
                .product(name: "ImagePipeVips", package: imagepipe),
                .product(name: "Benchmark", package: "benchmark"),
                "PlainLibvips",
            ],
            path: "Benchmarks/Compression",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ]
)
