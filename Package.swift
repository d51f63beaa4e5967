// swift-tools-version: 6.1
// imagepipe: turn original images into web variants and store them.
import PackageDescription

/// The fuzzing build (`Tests/Fuzz/fuzz.sh build`) instruments this package's own targets alone:
/// every Swift one with AddressSanitizer and libFuzzer's coverage counters, every C one with
/// AddressSanitizer and UBSan (Swift has no UBSan on Linux; C++'s vptr check needs RTTI the libraries
/// lack). Dependencies get none of it, so in `.build` beside the debug build they are not built
/// again: only these targets are, which takes minutes off `make test`. libFuzzer's runtime goes into
/// the harness alone: the `imagepipe` built with it keeps its own entry point, and is the sanitized
/// worker `make test` runs the hostile fixtures through. `IMAGEPIPE_FUZZ_BUILD=optimized` (`make fuzz`)
/// also optimizes them: three to four times the executions a second, for two more minutes of build.
let fuzzBuild = Context.environment["IMAGEPIPE_FUZZ_BUILD"] != nil
let optimized = Context.environment["IMAGEPIPE_FUZZ_BUILD"] == "optimized"
let coverage = "-sanitize-coverage=edge,trace-cmp,inline-8bit-counters,pc-table"
let instrumentedSwift: [SwiftSetting] =
    fuzzBuild ? [.unsafeFlags((optimized ? ["-O"] : []) + ["-sanitize=address", coverage, "-DFUZZING"])] : []
let instrumentedC: [CSetting] =
    fuzzBuild ? [.unsafeFlags((optimized ? ["-O1"] : []) + ["-fsanitize=address,undefined", "-fno-sanitize=vptr", "-fno-omit-frame-pointer"])] : []
/// The image shim is optimized in debug builds too (outside the fuzzing build): the tests run the
/// debug build, and unoptimized its SSIMULACRA 2 scorer (`ssimulacra2.c`, which workers and tests
/// both score with) took about a twelfth of the CPU the process suites used; with `-O2` they ran in
/// 390 s, not 503 s. The other C targets stay as a debugger wants them; release builds optimize all.
let imageShimC: [CSetting] = fuzzBuild ? instrumentedC : [.unsafeFlags(["-O2"], .when(configuration: .debug))]

/// Every Swift target's settings: the upcoming features, and the fuzzing build's instrumentation.
let strict: [SwiftSetting] =
    [
        .enableUpcomingFeature("ExistentialAny"),
        .enableUpcomingFeature("MemberImportVisibility"),
        .enableUpcomingFeature("InternalImportsByDefault"),
    ] + instrumentedSwift

let package = Package(
    name: "imagepipe",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "imagepipe", targets: ["imagepipe"]),
        .library(name: "ImagePipe", targets: ["ImagePipe"]),
        .library(name: "ImagePipeVips", targets: ["ImagePipeVips"]),
        .library(name: "ImagePipeLocalStorage", targets: ["ImagePipeLocalStorage"]),
        .library(name: "ImagePipeRemoteStorage", targets: ["ImagePipeRemoteStorage"]),
        .library(name: "ImagePipeQueue", targets: ["ImagePipeQueue"]),
        .library(name: "ImagePipePostgres", targets: ["ImagePipePostgres"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    ],
    targets: [
        // System libraries from Debian, found through pkg-config.
        .systemLibrary(name: "CLibVips", pkgConfig: "vips", providers: [.apt(["libvips-dev"])]),
        .systemLibrary(name: "CLibCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CLibCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        // Non-variadic wrappers around the libvips and libcurl calls Swift cannot make itself.
        // libheif directly for the one thing libvips 8.14 does not read: a HEIC's auxiliary gain map.
        .target(name: "CVipsShim", dependencies: ["CLibVips"], cSettings: imageShimC, linkerSettings: [.linkedLibrary("jpeg"), .linkedLibrary("heif")]),
        .target(name: "CCurlShim", dependencies: ["CLibCurl"], cSettings: instrumentedC),
        // File-system calls Glibc's module lacks: extended attributes, renameat2, sync_file_range.
        .target(name: "CFileSystem", cSettings: instrumentedC),
        // The image helpers' system calls: their sandbox (seccomp, Landlock, limits), their channel, their start.
        .target(name: "CSandbox", cSettings: instrumentedC),
        // IMAGEPIPE_CHECK_BLOCKING's view of waits on a condition variable (a NIO `wait()`): every
        // binary that links imagepipe has the calls its own objects make to them wrapped.
        .target(
            name: "CWaitCheck", cSettings: instrumentedC,
            linkerSettings: [
                .unsafeFlags(
                    [
                        "-Xlinker", "--wrap=pthread_cond_wait", "-Xlinker", "--wrap=pthread_cond_timedwait",
                        "-Xlinker", "--wrap=pthread_cond_clockwait",
                    ], .when(platforms: [.linux]))
            ]),

        // Along a job's path: queue → worker loop → FileHandler → compressor → storage.
        // The core: the job and its result, the sources, the FileHandler, the pipeline and its
        // capacity, and the protocols of compressors and stores.
        .target(
            name: "ImagePipe",
            dependencies: [
                "CLibCrypto", "CFileSystem", "CWaitCheck",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // The configuration file's TOML reader, for the command line.
        .target(name: "ImagePipeTOML", swiftSettings: strict),
        // The image compressor on libvips, and everything else that reads strangers' image bytes in
        // full: it runs inside the sandboxed image helper (with `--sandbox off`, in the worker). Its
        // folders show the three kinds: Containers/ (parsers and writers of image containers: Ultra
        // HDR, gain-map metadata, EXIF, JPEG and WebP rewriting), Analyses/ (facts and placeholders
        // from the decoded pixels), Vips/ (the libvips calls). The core reads only a source's first
        // bytes (or its framing) to route or refuse a job before a helper starts, and an output's
        // header to check it; each such reader says so at its top.
        .target(
            name: "ImagePipeVips",
            dependencies: [
                "ImagePipe", "CVipsShim", "CLibVips",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // The image work in sandboxed helper processes: the worker's pool and compressor, the helper's
        // side of the channel, the sandbox. Needs no libvips: the helper's command brings the compressor.
        .target(
            name: "ImagePipeSandbox",
            dependencies: [
                "ImagePipe", "CSandbox",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ],
            swiftSettings: strict
        ),
        // The embedded default store: files under a directory, made durable in shared rounds of fsyncs.
        .target(
            name: "ImagePipeLocalStorage",
            dependencies: ["ImagePipe", "CFileSystem"],
            swiftSettings: strict
        ),
        // Object stores over HTTP: S3-compatible services and Supabase Storage.
        .target(
            name: "ImagePipeRemoteStorage",
            dependencies: [
                "ImagePipe", "CCurlShim", "CLibCurl", "CLibCrypto",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ],
            swiftSettings: strict
        ),
        // The worker loop (its state machine and executor) and the queue directory.
        .target(
            name: "ImagePipeQueue",
            dependencies: [
                "ImagePipe",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        // The PostgreSQL queue: a module of its own, so only what needs it pays for postgres-nio's build.
        .target(
            name: "ImagePipePostgres",
            dependencies: [
                "ImagePipe", "ImagePipeQueue",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        // Operating a worker: Prometheus metrics, /healthz and /readyz on NIO's HTTP codec. A module of
        // its own, so the core and the queue stay free of NIO and the Prometheus registry.
        .target(
            name: "ImagePipeMonitoring",
            dependencies: [
                "ImagePipe", "ImagePipeQueue",
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        // `imagepipe bench`: whole-batch runs of imagepipe and reference tools, side by side.
        .target(name: "ImagePipeBench", dependencies: ["ImagePipe"], swiftSettings: strict),
        // Test helpers live with the tests. In-memory storage and scripted compressors:
        .target(name: "ImagePipeTestKit", dependencies: ["ImagePipe"], path: "Tests/ImagePipeTestKit", swiftSettings: strict),
        // Scratch folders, waiting, running the built binary:
        .target(name: "ImagePipeTestSupport", path: "Tests/ImagePipeTestSupport", swiftSettings: strict),
        // The queue contract, which every queue's test target runs against its queue:
        .target(
            name: "ImagePipeQueueContract", dependencies: ["ImagePipe", "ImagePipeQueue", "ImagePipeTestSupport"],
            path: "Tests/ImagePipeQueueContract", swiftSettings: strict),
        // Decoding outputs back, through libvips calls only tests make:
        .target(name: "CVipsProbeShim", dependencies: ["CLibVips", "CVipsShim"], path: "Tests/CVipsProbeShim", cSettings: instrumentedC),
        .target(
            name: "ImagePipeVipsTestSupport",
            dependencies: ["ImagePipe", "ImagePipeVips", "CVipsProbeShim", "CVipsShim", "CLibVips"],
            path: "Tests/ImagePipeVipsTestSupport",
            swiftSettings: strict
        ),
        // The command-line worker and its composition root.
        .executableTarget(
            name: "imagepipe",
            dependencies: [
                "ImagePipe", "ImagePipeVips", "ImagePipeSandbox", "ImagePipeLocalStorage", "ImagePipeRemoteStorage", "ImagePipeQueue",
                "ImagePipePostgres", "ImagePipeBench", "ImagePipeMonitoring", "ImagePipeTOML", "CSandbox",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict,
            linkerSettings: fuzzBuild ? [.unsafeFlags(["-sanitize=address"])] : []
        ),

        // libFuzzer harnesses of the Swift parsers of untrusted input (`make fuzz`, Tests/Fuzz/README.md).
        // Linked with libFuzzer by the fuzzing build (-D FUZZING); a plain build replays files through a target.
        .executableTarget(
            name: "ImagePipeFuzz",
            dependencies: ["ImagePipe", "ImagePipeVips", "ImagePipeRemoteStorage", "ImagePipePostgres", "ImagePipeTOML", "ImagePipeSandbox"],
            path: "Tests/Fuzz/ImagePipeFuzz",
            swiftSettings: strict,
            linkerSettings: fuzzBuild ? [.unsafeFlags(["-sanitize=fuzzer,address"])] : []
        ),

        .testTarget(
            name: "ImagePipeTests",
            dependencies: ["ImagePipe", "ImagePipeTestKit", "ImagePipeTestSupport"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "ImagePipeSandboxTests",
            dependencies: ["ImagePipe", "ImagePipeSandbox", "ImagePipeTestSupport", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),
        // Hostile code run inside real image helpers (a libvips module built by the tests from module/).
        .testTarget(
            name: "ImagePipeHostileHelperTests",
            dependencies: ["ImagePipe", "ImagePipeTestSupport"],
            exclude: ["module"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "ImagePipeLocalStorageTests",
            dependencies: ["ImagePipe", "ImagePipeLocalStorage", "ImagePipeTestSupport"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "ImagePipeBenchTests",
            dependencies: ["ImagePipe", "ImagePipeBench"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "ImagePipeVipsTests",
            dependencies: ["ImagePipe", "ImagePipeVips", "ImagePipeVipsTestSupport", "ImagePipeTestKit", "ImagePipeTestSupport", "CLibVips"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "ImagePipeRemoteStorageTests",
            dependencies: [
                "ImagePipe", "ImagePipeRemoteStorage", "ImagePipeLocalStorage", "ImagePipeVipsTestSupport", "ImagePipeTestKit",
                "ImagePipeTestSupport", .product(name: "Logging", package: "swift-log"),
            ],
            exclude: ["Support/python"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "ImagePipeQueueTests",
            dependencies: [
                "ImagePipe", "ImagePipeQueue", "ImagePipeQueueContract", "ImagePipeTestKit", "ImagePipeTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "ImagePipePostgresTests",
            dependencies: [
                "ImagePipe", "ImagePipeQueue", "ImagePipeQueueContract", "ImagePipePostgres", "ImagePipeTestKit", "ImagePipeTestSupport", "ImagePipeVips",
                "ImagePipeVipsTestSupport",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            exclude: ["Support/python"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "ImagePipeMonitoringTests",
            dependencies: [
                "ImagePipe", "ImagePipeMonitoring", "ImagePipeTestSupport",
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "ImagePipeCLITests",
            dependencies: ["ImagePipe", "ImagePipeTOML", "ImagePipeVipsTestSupport", "ImagePipeQueue", "ImagePipeTestKit", "ImagePipeTestSupport"],
            swiftSettings: strict
        ),
    ]
)
