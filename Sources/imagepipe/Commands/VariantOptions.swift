// The variants a command makes (or, for prune, keeps): --variant, --preset, the --config file's presets.
import ArgumentParser
import ImagePipe

/// Which variants: the ones given with `--variant`, else a preset (built in, or defined in the
/// `--config` file). Shared by batch, watch and prune, so prune keeps exactly the variants a batch
/// with the same options would make.
struct VariantOptions: ParsableArguments {
    @Option(
        name: .customLong("variant"),
        help: ArgumentHelp(
            "A variant NAME=WxH,FORMAT,QUALITY[,OPTION...] (repeatable; replaces the preset). " + OutputFormat.variantHelp
                + "nowatermark, watermark=FRACTION, metadata=POLICY, still (an animated source's first frame). "
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
            "A TOML file setting any option of batch, watch and prune (key = the option's long name), with [batch], "
                + "[watch], [prune] and [presets] tables. Every option can also be set by IMAGEPIPE_<NAME> (e.g. IMAGEPIPE_MAX_ATTEMPTS); "
                + "flags win over the environment, which wins over the file. Default: IMAGEPIPE_CONFIG.",
            valueName: "file"))
    var config: String?

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
    ///
    /// - Parameter withOriginal: whether `--with-original` is given, whose key a variant named
    ///   `original` would share.
    func variantSpecs(withOriginal: Bool) throws(ImagePipeError) -> [VariantSpec] {
        let specs = try Preset.variants(variants, preset: preset, defined: definedPresets)
        try Preset.validate(specs)
        if withOriginal, specs.contains(where: { $0.name == FileHandler.originalVariantName }) {
            throw .configuration("a variant named '\(FileHandler.originalVariantName)' would share its keys with --with-original; rename it")
        }
        return specs
    }
}
