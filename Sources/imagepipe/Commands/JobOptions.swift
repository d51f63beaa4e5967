// Options shared by every command that processes images: variants, keys, limits, concurrency, logging.
import ArgumentParser
import Foundation
import ImagePipe
import ImagePipeSandbox
import Logging

/// What to make of each source and how hard to work.
struct JobOptions: ParsableArguments {
    @OptionGroup var storage: StorageOptions

    @OptionGroup var variantOptions: VariantOptions

    @OptionGroup var watermark: WatermarkOptions

    @Option(
        name: .long,
        help: ArgumentHelp(
            "What every variant keeps of the source's metadata, unless its spec says metadata=POLICY: strip (nothing), "
                + "copyright (EXIF Artist, Copyright), safe (copyright, capture dates, camera, lens, an sRGB profile; never GPS, "
                + "serial numbers, maker notes or thumbnails), keep (all, orientation reset to 1, no thumbnail).",
            valueName: "policy"))
    var metadata: String = MetadataPolicy.strip.rawValue

    @Option(
        name: .long,
        help: ArgumentHelp(
            "What every JPEG variant of an HDR original (an Ultra HDR JPEG, an iPhone HEIC) makes of its gain map, unless its spec "
                + "says hdr=keep|drop: keep (an Ultra HDR JPEG: the SDR picture exactly as with drop, and the gain map after it, "
                + "which HDR screens brighten it with) or drop (the SDR picture alone). Other formats' variants are SDR.",
            valueName: "policy"))
    var hdr: String = HDRPolicy.keep.rawValue

    @Flag(
        name: .long,
        help:
            "Also score fixed-quality variants (SSIMULACRA 2, recorded in the manifest); auto variants always are, and get their full score instead of the sampled estimate."
    )
    var score = false

    @Flag(
        name: .customLong("always-encode"),
        help:
            "Encode every variant. By default a JPEG variant at its JPEG original's own size that would come out larger than the original is the original's bytes, its metadata removed (marked kept_original in the manifest)."
    )
    var alwaysEncode = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "What the image helper finds in each original for its record's facts: all (the default), none, or some of pdq (a perceptual hash, for `imagepipe duplicates`), palette (up to 6 main colours), provenance (Content Credentials, the IPTC digital source type).",
            valueName: "facts"))
    var facts: String = "all"

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Key template. Placeholders: {dir} {stem} {variant} {ext} {hash} {sha256} {srcext}.", valueName: "template"))
    var key: String = KeyTemplate.default.text

    @Flag(
        name: .long,
        help: ArgumentHelp(
            "Replace outputs made from other originals (each replacement is logged). Without it, such a key fails the image with key_collision."))
    var overwrite = false

    @Flag(
        name: .long,
        help: ArgumentHelp(
            "Replace outputs made from an earlier version of the same original (same name, other bytes), also those served as immutable (warned of); each is logged. A batch replaces the others without it; watch only with it."
        ))
    var update = false

    @Option(name: .long, help: "Images compressed at once (one per core unless set).")
    var jobs: Int = ProcessInfo.processInfo.activeProcessorCount

    @Option(name: .long, help: "Objects stored at once.")
    var uploads: Int = 4

    @Option(name: .customLong("max-pixels"), help: "Refuse sources declaring more pixels than this (checked before decoding).")
    var maxPixels: Int = CompressionLimits.default.maxPixels

    @Option(
        name: .customLong("max-frames"),
        help: "Refuse animated sources declaring more frames than this when their frames are all decoded (checked before decoding).")
    var maxFrames: Int = CompressionLimits.defaultMaxFrames

    @Option(
        name: .customLong("working-memory"),
        help: ArgumentHelp(
            "MiB the images compressed at once may hold together (default: 128 per --jobs, more with auto qualities); 0: no limit.",
            valueName: "MiB"))
    var workingMemory: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "on: every image is decoded, resized and encoded in a sandboxed helper process (no network, no files, no exec), "
                + "so a hostile image costs its job, never the worker or its secrets. off: in the worker itself, for a platform "
                + "that cannot set the sandbox up; then a crash ends the worker and --job-timeout does not apply.",
            valueName: "on|off"))
    var sandbox: String = "on"

    @Option(
        name: .customLong("helper-user"),
        help: ArgumentHelp(
            "The user the image helpers switch to, with no capability, when the worker runs as root or holds capabilities: "
                + "a name, UID or UID:GID (default: the imagepipe user where it exists, else nobody).",
            valueName: "user"))
    var helperUser: String?

    @Option(
        name: .customLong("job-timeout"),
        help: ArgumentHelp(
            "Seconds one image's work may take in its helper (waits for working memory not counted; with them, three times "
                + "this): past it the helper is killed and the image fails with job_timeout.",
            valueName: "seconds"))
    var jobTimeout: Double = JobOptions.defaultJobTimeout

    /// The default time limit of one image's work. The largest image the default limits allow, a
    /// 100-megapixel JPEG, took 4.6 s with the web preset on a 2-core machine with tests running
    /// beside it (docs/performance.md, "Image helpers"); 300 s leaves room for formats without
    /// shrink-on-load, auto qualities and a loaded machine, and still ends a hung decoder.
    static let defaultJobTimeout: Double = 300

    /// Whether image work runs in sandboxed helpers (`--sandbox on`).
    var sandboxed: Bool { sandbox.lowercased() == "on" }

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: String = "info"

    func validate() throws {
        guard jobs >= 1 && jobs <= 256 else { throw ValidationError("--jobs must be between 1 and 256") }
        guard uploads >= 1 && uploads <= 256 else { throw ValidationError("--uploads must be between 1 and 256") }
        guard maxPixels >= 1 else { throw ValidationError("--max-pixels must be positive") }
        guard maxFrames >= 1 else { throw ValidationError("--max-frames must be positive") }
        guard (workingMemory ?? 0) >= 0 else { throw ValidationError("--working-memory cannot be negative") }
        guard ["on", "off"].contains(sandbox.lowercased()) else { throw ValidationError("--sandbox must be on or off") }
        do {
            _ = try HelperIdentity.resolve(helperUser)
        } catch {
            throw ValidationError(error.message)
        }
        guard jobTimeout > 0 && jobTimeout <= 604_800 else { throw ValidationError("--job-timeout must be a number of seconds from 0 to a week") }
        guard Logger.Level(rawValue: logLevel.lowercased()) != nil else {
            throw ValidationError("--log-level must be one of trace, debug, info, notice, warning, error, critical")
        }
        // Checked while parsing, so that a bad value from the configuration file is reported with its key.
        do {
            _ = try variantSpecs()
            _ = try KeyTemplate(key)
        } catch {
            throw ValidationError(error.reason)
        }
    }

    /// The variants asked for, or the preset (the web preset unless chosen).
    func variantSpecs() throws(ImagePipeError) -> [VariantSpec] {
        let policy = try MetadataPolicy(name: metadata)
        let hdrPolicy = try HDRPolicy(name: hdr)
        return try variantOptions.variantSpecs(withOriginal: storage.withOriginal).map { $0.applying(metadata: policy).applying(hdr: hdrPolicy) }
    }
}
