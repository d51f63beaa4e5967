// The one place that turns command-line options into concrete services: storage, compressor, handler, pipeline.
import Foundation
import ImagePipe
import ImagePipeVips
import Logging
import Synchronization

/// Builds the services a command runs with.
enum CompositionRoot {
    /// Installs the console log handler at the requested level and format and returns the root logger.
    ///
    /// swift-log allows one bootstrap per process and stops the process on a second: a command that
    /// opens its database once per state (`queue list` over every state) asks again, so only the
    /// first call installs the handler.
    static func bootstrapLogging(level: String, format: LogFormat = .text) -> Logger {
        let first = bootstrapped.withLock { done in
            defer { done = true }
            return !done
        }
        if first {
            let level = Logger.Level(rawValue: level.lowercased()) ?? .info
            let redaction = SecretRedaction()
            LoggingSystem.bootstrap { label in ConsoleLogHandler(label: label, logLevel: level, format: format, redaction: redaction) }
        }
        return Logger(label: "imagepipe")
    }

    private static let bootstrapped = Mutex(false)

    /// The FileHandler for a set of job options, reading the sources that are URLs among `sources`
    /// from object storage (up to `maxSourceBytes` each).
    static func fileHandler(
        _ options: JobOptions, force: Bool = false, sources: [String] = [], maxSourceBytes: Int = 256 << 20,
        logger: Logger
    ) throws(ImagePipeError) -> FileHandler {
        try Vips.configure(threadsPerImage: threadsPerImage(jobs: options.jobs))
        // Read and decoded once, before any image: a logo that cannot be stops the command here.
        let specs = try options.variantSpecs()
        try options.watermark.checkApplies(to: specs)
        let logo = try options.watermark.file.map { (path) throws(ImagePipeError) in try WatermarkLogo(path: path) }
        let watermark = try logo.map { (logo) throws(ImagePipeError) in try options.watermark.settings(logoSHA256: logo.sha256) }
        let variants = specs.map { $0.applying(watermark) }
        let configuration = FileHandler.Configuration(
            variants: variants,
            keyTemplate: try KeyTemplate(options.key),
            limits: CompressionLimits(maxPixels: options.maxPixels, maxFrames: options.maxFrames),
            cacheControl: options.storage.cacheControl,
            maxSourceBytes: maxSourceBytes,
            storeOriginal: options.storage.withOriginal,
            overwrite: options.overwrite,
            update: options.update,
            force: force)
        var encoders = VipsCompressor.Configuration()
        encoders.scoreEveryVariant = options.score
        encoders.keepsSmallerOriginal = !options.alwaysEncode
        let sourceURLs = sources.filter(ObjectLocation.isURL)
        return FileHandler(
            compressor: try VipsCompressor(configuration: encoders, watermarkLogo: logo),
            storage: try StorageFactory.make(options.storage, sourceURLs: sourceURLs),
            sources: try StorageFactory.sources(sourceURLs, options.storage),
            configuration: configuration, logger: logger)
    }

    /// The pipeline around a handler, with every bound of its capacity decided here: compressions
    /// and transfers at once, room and hold limit from the outputs each job writes, and the working
    /// memory compressions share (`--working-memory`, or what the compressor needs per image for
    /// these variants, times the compressions at once).
    static func pipeline(_ handler: FileHandler, _ options: JobOptions) -> JobPipeline {
        let variants = handler.configuration.variants
        let workingMemory = options.workingMemory.map { $0 << 20 } ?? VipsCompressor.Configuration.workingMemoryPerImage(for: variants) * options.jobs
        let limits = Capacity.Limits(
            jobs: options.jobs, uploads: options.uploads,
            outputsPerJob: variants.count + (handler.configuration.storeOriginal ? 1 : 0),
            workingMemory: workingMemory > 0 ? workingMemory : nil)
        return JobPipeline(handler: handler, limits: limits)
    }

    /// libvips threads per image: libvips' own `VIPS_CONCURRENCY` when set, else the cores shared
    /// among the images compressed at once.
    static func threadsPerImage(jobs: Int) -> Int {
        if let value = ProcessInfo.processInfo.environment["VIPS_CONCURRENCY"].flatMap(Int.init), value > 0 { return value }
        return max(1, ProcessInfo.processInfo.activeProcessorCount / max(1, jobs))
    }
}
