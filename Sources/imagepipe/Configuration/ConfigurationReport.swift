// The text `imagepipe config` prints: the resolved settings as a TOML file, each with where it came from, secrets masked.
import ImagePipe
import ImagePipeQueue

/// The resolved configuration of a command, written so that it can be read back as a `--config`
/// file (less the masked secrets), with a comment after each setting naming its source.
struct ConfigurationReport {
    let line: ConfiguredCommandLine
    let environment: [String: String]

    var text: String {
        var lines = [
            "# imagepipe \(line.command), as configured: the command line, then IMAGEPIPE_* variables, then "
                + (line.configurationPath ?? "a --config file (none given)") + ", then defaults."
        ]
        lines.append("[\(line.command)]")
        // A queue has no use for another kind's settings: left at their defaults, they are not
        // listed (set, they are, as the run would take them).
        let queue = line.settings.first { $0.option.key == "queue" }?.values.last
        let kind = queue.flatMap { try? QueueDrivers.kind(of: $0) }
        let otherKinds = QueueDrivers.all.filter { other in kind.map { ObjectIdentifier(other) != ObjectIdentifier($0) } ?? true }.map {
            $0.optionPrefix
        }
        for setting in line.settings {
            if line.command == "watch", kind != nil, setting.origin == .defaultValue,
                otherKinds.contains(where: { setting.option.abstract?.hasPrefix($0) == true })
            {
                continue
            }
            let source = "  # " + setting.origin.description
            switch (setting.option.kind, setting.values.isEmpty) {
            case (.flag, _):
                lines.append("\(setting.option.key) = \(setting.values.last == "true")" + source)
            case (_, true):
                lines.append("# \(setting.option.key) is not set")
            case (_, false) where setting.option.isRepeating:
                lines.append("\(setting.option.key) = [" + setting.values.map(Self.literal).joined(separator: ", ") + "]" + source)
            case (_, false):
                lines.append("\(setting.option.key) = \(Self.literal(setting.values.last!))" + source)
            }
        }
        lines.append("")
        lines.append("[presets]")
        for preset in line.presets {
            let origin = ConfiguredCommandLine.Origin.file(path: line.configurationPath ?? "", line: preset.line, key: "presets.\(preset.name)")
            lines.append("\(preset.name) = [" + preset.specs.map(Self.literal).joined(separator: ", ") + "]  # " + origin.description)
        }
        for name in Preset.names {
            lines.append("# \(name) = [" + (Preset.named(name) ?? []).map { Self.literal($0.specString) }.joined(separator: ", ") + "]  # built in")
        }
        lines.append("")
        lines.append("# Credentials come from the environment only:")
        let present = SecretMasking.credentialVariables.filter { environment[$0] != nil }
        if present.isEmpty { lines.append("#   none set") }
        for name in present {
            let value = environment[name]!
            let shown = SecretMasking.secretVariables.contains(name) ? SecretMasking.mask : SecretMasking.masked(value)
            lines.append("#   \(name) = \(Self.literal(shown))")
        }
        return lines.joined(separator: "\n")
    }

    /// A number as it is, anything else as a TOML string; URLs' passwords masked.
    private static func literal(_ value: String) -> String {
        if Int(value) != nil || (Double(value) != nil && value.contains(".") && value.last?.isNumber == true) { return value }
        return SecretMasking.masked(value).doubleQuoted
    }
}
