// Process-wide libvips set-up: start once, size its thread pool, collect its error text.
import CVipsShim
import Foundation
public import ImagePipe
import Logging

/// The libvips library as a process-wide resource.
public enum Vips {
    private static let started: Bool = {
        guard ipv_init(CommandLine.arguments.first ?? "imagepipe") == 0 else { return false }
        if let failure = ipv_module_failure().map({ String(cString: $0) }), !failure.isEmpty {
            Vips.logger.warning("libvips' HEIC and AVIF loader did not load: those images will fail unsupported_format (\(failure))")
        }
        // libvips prints warnings (e.g. about colour metadata it ignores) straight to stderr; log them instead.
        ipv_set_warning_handler { message in
            guard let message else { return }
            Vips.logger.debug("libvips: \(String(cString: message))")
        }
        return true
    }()

    private static let logger = Logger(label: "imagepipe.vips")

    /// Starts libvips (once) and applies imagepipe's settings: no operation cache, untrusted
    /// loaders blocked, `threadsPerImage` worker threads per image pipeline.
    ///
    /// With several images compressed at once, giving each image all cores oversubscribes the
    /// machine; the composition root passes `cores / jobs`.
    public static func configure(threadsPerImage: Int) throws(ImagePipeError) {
        guard started else { throw .configuration("libvips failed to start: \(takeError() ?? "unknown error")") }
        ipv_configure(Int32(max(1, threadsPerImage)))
    }

    /// Tunes the C allocator for a long run of large, short-lived pixel buffers: at most 2 malloc
    /// arenas, buffers of 4 MiB or more always mapped and unmapped, and at most 8 MiB kept free at
    /// the top of the heap. On glibc a long batch otherwise grows: up to 8 arenas per core each keep
    /// freed memory, and the mmap threshold climbs to 32 MiB after the first large free, so decode
    /// buffers then stay in the heap, fragmented. Smaller buffers stay in the heap for the next image,
    /// which saves it faulting them in again (see ``VipsCompressor/releaseMemory()`` for the rest).
    /// Settings given in `MALLOC_ARENA_MAX`, `MALLOC_MMAP_THRESHOLD_` or `MALLOC_TRIM_THRESHOLD_`
    /// win. Call it first, before other threads start.
    public static func tuneAllocator(arenas: Int = 2, mmapThreshold: Int = 4 << 20, trimThreshold: Int = 8 << 20) {
        let environment = ProcessInfo.processInfo.environment
        _ = ipv_tune_malloc(
            environment["MALLOC_ARENA_MAX"] == nil ? Int32(arenas) : 0,
            environment["MALLOC_MMAP_THRESHOLD_"] == nil ? Int32(mmapThreshold) : 0,
            environment["MALLOC_TRIM_THRESHOLD_"] == nil ? Int32(trimThreshold) : 0)
    }

    /// Starts libvips with default settings if nothing configured it yet.
    package static func ensureStarted() throws(ImagePipeError) {
        guard started else { throw .configuration("libvips failed to start: \(takeError() ?? "unknown error")") }
    }

    /// Initialises every libvips operation's class now rather than at first use, starting no
    /// thread: the zygote does it once for every helper it forks.
    public static func warmUpClasses() {
        ipv_warm_classes()
    }

    /// The files of the shared libraries this process has loaded, in load order (libvips' loaders
    /// and codecs among them once it has started).
    public static var loadedLibraries: [String] {
        var files: [String] = []
        while let file = ipv_loaded_library(files.count) { files.append(String(cString: file)) }
        return files
    }

    /// The libvips version, e.g. `8.14.1`.
    public static var version: String {
        "\(vips_version(0)).\(vips_version(1)).\(vips_version(2))"
    }

    /// Takes libvips' reason for the failure on this thread, cleaned to one line: the warnings its
    /// loaders raised here (libpng's "PNG unsigned integer out of range" is one) and its error buffer,
    /// each line once. The error buffer is process-wide, so under concurrency it can rarely hold
    /// another thread's message too; only the last lines are kept.
    package static func takeError() -> String? {
        guard let raw = ipv_take_error() else { return nil }
        defer { ipv_free(raw) }
        let lines = String(cString: raw).split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
        var seen = Set<String>()
        let unique = lines.filter { seen.insert($0).inserted }
        return unique.suffix(3).joined(separator: "; ")
    }
}
