// Options shared by every command that processes images: variants, keys, limits, concurrency, logging.
import ArgumentParser
import Foundation
import ImagePipe
import Logging

/// What to make of each source and how hard to work.
struct JobOptions: ParsableArguments {
    @OptionGroup var storage: StorageOptions

    @Option(
        name: .customLong("variant"),
        help: ArgumentHelp(
            "A variant NAME=WxH,FORMAT,QUALITY[,OPTION...] (repeatable; replaces the preset). FORMAT: jpeg, webp, avif, png. "
                + "QUALITY: qN, auto (SSIMULACRA 2 target \(VariantSpec.formatTarget(VariantSpec.defaultAutoTarget))) or auto:TARGET; "
                + "left out for png and lossless webp. OPTION: cover, progressive or baseline (jpeg), 444 (jpeg, avif), effort=N "
                + "(webp 0-6, avif 0-9), smart_subsample, lossless (webp), nowatermark, watermark=FRACTION, metadata=POLICY. "
                + "Wx or xH leaves a side open (not with cover). "
                + "Examples: photo=1600x,jpeg,q80  photo=1600x,jpeg,auto  hero=2400x1200,avif,q50,444,effort=4,cover",
            valueName: "spec"))
    var variants: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The variants when no --variant is given: "
                + Preset.names.map { name in
                    "\(name) (\(Preset.named(name)!.map(\.specString).joined(separator: " ")))"
                }.joined(separator: "; ") + "; or one defined under [presets] in the --config file.", valueName: "name"))
    var preset: String = "web"

    /// The `--config` file's presets, one `NAME:SPEC` per variant, passed on by `ConfiguredCommandLine`.
    @Option(name: .customLong("preset-variant"), help: .private)
    var presetVariants: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp(
            "A TOML file setting any option of batch and watch (key = the option's long name), with [batch], [watch] "
                + "and [presets] tables. Every option can also be set by IMAGEPIPE_<NAME> (e.g. IMAGEPIPE_MAX_ATTEMPTS); "
                + "flags win over the environment, which wins over the file. Default: IMAGEPIPE_CONFIG.",
            valueName: "file"))
    var config: String?

    @OptionGroup var watermark: WatermarkOptions

    @Option(
        name: .long,
        help: ArgumentHelp(
            "What every variant keeps of the source's metadata, unless its spec says metadata=POLICY: strip (nothing), "
                + "copyright (EXIF Artist, Copyright), safe (copyright, capture dates, camera, lens, an sRGB profile; never GPS, "
                + "serial numbers, maker notes or thumbnails), keep (all, orientation reset to 1, no thumbnail).",
            valueName: "policy"))
    var metadata: String = MetadataPolicy.strip.rawValue

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
            "Replace outputs made from an earlier version of the same original (same name, other bytes), as sync tools do; each is logged."))
    var update = false

    @Option(name: .long, help: "Images compressed at once (one per core unless set).")
    var jobs: Int = ProcessInfo.processInfo.activeProcessorCount

    @Option(name: .long, help: "Objects stored at once.")
    var uploads: Int = 4

    @Option(name: .customLong("max-pixels"), help: "Refuse sources declaring more pixels than this (checked before decoding).")
    var maxPixels: Int = CompressionLimits.default.maxPixels

    @Option(
        name: .customLong("working-memory"),
        help: ArgumentHelp(
            "MiB the images compressed at once may hold together (default: 128 per --jobs, more with auto qualities); 0: no limit.",
            valueName: "MiB"))
    var workingMemory: Int?

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: String = "info"

    func validate() throws {
        guard jobs >= 1 && jobs <= 256 else { throw ValidationError("--jobs must be between 1 and 256") }
        guard uploads >= 1 && uploads <= 256 else { throw ValidationError("--uploads must be between 1 and 256") }
        guard maxPixels >= 1 else { throw ValidationError("--max-pixels must be positive") }
        guard (workingMemory ?? 0) >= 0 else { throw ValidationError("--working-memory cannot be negative") }
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

    /// The `--config` file's presets, in file order.
    private var definedPresets: [(name: String, specs: [String])] {
        var presets: [(name: String, specs: [String])] = []
        for entry in presetVariants {
            guard let colon = entry.firstIndex(of: ":") else { continue }
            let name = String(entry[..<colon]), spec = String(entry[entry.index(after: colon)...])
            if let index = presets.firstIndex(where: { $0.name == name }) {
                presets[index].specs.append(spec)
            } else {
                presets.append((name, [spec]))
            }
        }
        return presets
    }

    /// The variants asked for, or the preset (the web preset unless chosen).
    func variantSpecs() throws(ImagePipeError) -> [VariantSpec] {
        let policy = try MetadataPolicy(name: metadata)
        let specs = try Preset.variants(variants, preset: preset, defined: definedPresets).map { $0.applying(metadata: policy) }
        try Preset.validate(specs)
        if storage.withOriginal, specs.contains(where: { $0.name == FileHandler.originalVariantName }) {
            throw .configuration("a variant named '\(FileHandler.originalVariantName)' would share its keys with --with-original; rename it")
        }
        return specs
    }
}
