// The one place that turns command-line options into concrete services: storage, compressor, handler, pipeline.
import Foundation
import ImagePipe
import ImagePipeSandbox
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
    /// `updatesEditedOriginals` is on for a batch (see ``FileHandler/Configuration/updatesEditedOriginals``).
    static func fileHandler(
        _ options: JobOptions, force: Bool = false, updatesEditedOriginals: Bool = false, sources: [String] = [],
        maxSourceBytes: Int = 256 << 20, tracer: Tracer? = nil, logger: Logger
    ) throws(ImagePipeError) -> FileHandler {
        // A write to the queue or the destination that never returns (a frozen disk, a hung network
        // mount) is logged, not left to silence.
        StallWatch.startLogging(logger)
        // libvips runs in this process only for image work done here: every image with --sandbox
        // off, else only the watermark logo, which the worker checks before any helper starts.
        if !options.sandboxed || options.watermark.file != nil {
            try Vips.configure(threadsPerImage: threadsPerImage(jobs: options.jobs))
        }
        // Read and decoded once, before any image: a logo that cannot be stops the command here.
        let specs = try options.variantSpecs()
        try options.watermark.checkApplies(to: specs)
        // Read once: the worker checks and hashes these bytes, and hands the same ones to every helper.
        let logoBytes = try options.watermark.file.map { (path) throws(ImagePipeError) in try WatermarkLogo.read(path) }
        var logo: WatermarkLogo?
        if let path = options.watermark.file, let logoBytes { logo = try WatermarkLogo(bytes: logoBytes, path: path) }
        let watermark = try logo.map { (logo) throws(ImagePipeError) in try options.watermark.settings(logoSHA256: logo.sha256) }
        let variants = specs.map { $0.applying(watermark) }
        let keyTemplate = try KeyTemplate(options.key)
        var configuration = FileHandler.Configuration(
            variants: variants,
            keyTemplate: keyTemplate,
            limits: CompressionLimits(maxPixels: options.maxPixels, maxFrames: options.maxFrames),
            cacheControl: cacheControl(options.storage.cacheControl, keyTemplate, logger: logger),
            inMemoryLimit: options.sandboxed ? SandboxedCompressor.sourcesReadWholeUpTo : SourceReader.defaultInMemoryLimit,
            maxSourceBytes: maxSourceBytes,
            storeOriginal: options.storage.withOriginal,
            overwrite: options.overwrite,
            update: options.update,
            force: force,
            updatesEditedOriginals: updatesEditedOriginals)
        configuration.tracer = tracer
        var encoders = VipsCompressor.Configuration()
        encoders.scoreEveryVariant = options.score
        encoders.keepsSmallerOriginal = !options.alwaysEncode
        encoders.facts = try FactKinds(parsing: options.facts)
        let sourceURLs = sources.filter(ObjectLocation.isURL)
        return FileHandler(
            compressor: try compressor(options, encoders: encoders, variants: variants, logo: logo, logoBytes: logoBytes, logger: logger),
            storage: try StorageFactory.make(options.storage, sourceURLs: sourceURLs),
            sources: try StorageFactory.sources(sourceURLs, options.storage),
            configuration: configuration, logger: logger)
    }

    /// The Cache-Control stored with every object: `--cache-control` (flag, variable or file) when
    /// given, for every key; else what the key template calls for (``CacheControl/default(for:)``).
    /// A given value that says `immutable` for keys from names is warned of once: an edited photo
    /// then cannot be published under its URL without caches keeping the old picture.
    static func cacheControl(_ given: String?, _ template: KeyTemplate, logger: Logger) -> String {
        guard let given else { return CacheControl.default(for: template) }
        if CacheControl.isImmutable(given), !template.usesHash {
            logger.warning(
                """
                --cache-control '\(given)' says immutable, but --key '\(template.text)' has no {hash} or {sha256}: an edited \
                photo keeps its keys, and a plain run will refuse to replace its outputs (key_collision), since caches may keep \
                the old picture \(CacheControl.lifetimeText(given)); key outputs by content, or leave --cache-control out
                """)
        }
        return given
    }

    /// Where image work runs: in sandboxed helper processes, one per image compressed at once (the
    /// default), or with `--sandbox off` in this process. Helpers are started here, so a sandbox
    /// that cannot be applied stops the command before any job, naming the cause.
    static func compressor(
        _ options: JobOptions, encoders: VipsCompressor.Configuration, variants: [VariantSpec], logo: WatermarkLogo?, logoBytes: Data?,
        logger: Logger
    ) throws(ImagePipeError) -> any ImageCompressor {
        guard options.sandboxed else {
            logger.warning(
                "--sandbox off: images are decoded inside the worker; a crash in an image library ends it, and --job-timeout does not apply")
            return try VipsCompressor(configuration: encoders, watermarkLogo: logo)
        }
        // A helper may map its worker's whole budget (one image larger than it runs alone) and the headroom; none without a budget.
        let budget = workingMemory(options, variants)
        let identity: HelperIdentity?
        do {
            identity = try HelperIdentity.resolve(options.helperUser)
        } catch {
            throw .configuration(error.message)
        }
        let settings = HelperSettings(
            sandbox: true, parent: getpid(), dataLimit: budget > 0 ? budget + HelperSettings.dataHeadroom : 0,
            threadsPerImage: threadsPerImage(jobs: options.jobs), compressor: (try? JSONEncoder().encode(encoders)) ?? Data(),
            identity: identity)
        // No process of this user may read this one's memory or /proc files (its environment holds
        // the credentials) for as long as it runs: a helper on a kernel without Landlock could otherwise.
        Sandbox.makeWorkerPrivate()
        return try SandboxedCompressor(
            settings: settings, helpers: options.jobs, logo: logoBytes, jobTimeout: .milliseconds(Int64(options.jobTimeout * 1000)),
            logger: logger)
    }

    /// The working memory compressions share: `--working-memory`, or what the compressor needs per
    /// image for these variants times the compressions at once; 0 for no limit.
    static func workingMemory(_ options: JobOptions, _ variants: [VariantSpec]) -> Int {
        options.workingMemory.map { $0 << 20 } ?? VipsCompressor.Configuration.workingMemoryPerImage(for: variants) * options.jobs
    }

    /// The pipeline around a handler, with every bound of its capacity decided here: compressions
    /// and transfers at once, room and hold limit from the outputs each job writes, and the working
    /// memory compressions share (`--working-memory`, or what the compressor needs per image for
    /// these variants, times the compressions at once).
    static func pipeline(_ handler: FileHandler, _ options: JobOptions) -> JobPipeline {
        let variants = handler.configuration.variants
        let workingMemory = workingMemory(options, variants)
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
