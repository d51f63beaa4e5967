// A batch or watch command line completed from IMAGEPIPE_* variables and the --config file: flags, then environment, then file, then defaults.
import ArgumentParser
import Foundation
import ImagePipe

/// The command line a command runs with: what was typed, plus every option it leaves out that an
/// `IMAGEPIPE_*` variable or the configuration file sets.
///
/// The settings become ordinary arguments (`--jobs=4`) ahead of the typed ones, so argument-parser
/// stays the one place that knows an option's type, default and checks: a value from a file is
/// refused exactly as the same value typed would be, and the error then names where it came from.
struct ConfiguredCommandLine {
    /// Where a setting came from, in order of precedence.
    enum Origin: Equatable {
        case commandLine
        case environment(String)
        case file(path: String, line: Int, key: String)
        case defaultValue

        /// How an error or `imagepipe config` names it.
        var description: String {
            switch self {
            case .commandLine: "command line"
            case .environment(let name): "environment variable \(name)"
            case .file(let path, let line, let key): "\(path):\(line): \(key)"
            case .defaultValue: "default"
            }
        }
    }

    /// One option's resolved value.
    struct Setting {
        var option: CommandOptions.Option
        /// Its values as typed on a command line (`"true"` for a flag that is on); empty when unset.
        var values: [String]
        var origin: Origin
    }

    /// The subcommand: `batch`, `watch` or `prune`.
    let command: String
    /// Every option of the command, resolved, in declaration order.
    let settings: [Setting]
    /// The presets the file defines.
    let presets: [(name: String, specs: [String], line: Int)]
    /// The configuration file's path, if any.
    let configurationPath: String?
    /// `IMAGEPIPE_*` variables that name no option of any command.
    let unknownVariables: [String]

    private let typed: [String]
    private let presetArguments: [String]
    private let terminated: Bool

    /// Options decided together.
    static let linkedKeys: [Set<String>] = [
        // `--variant` replaces the preset: whichever source sets either decides both, so a preset
        // given on the command line is not overridden by variants from the file.
        ["variant", "preset"]
    ]

    /// The commands whose options the configuration covers.
    static let commands = ["batch", "watch", "prune"]

    /// Resolves `arguments` (what follows the subcommand's name) for `command`.
    init(
        command: String, arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment,
        catalogs: [CommandOptions]? = nil
    ) throws(ImagePipeError) {
        guard Self.commands.contains(command) else { preconditionFailure("\(command) takes no configuration") }
        // Describing a command costs argument-parser a walk of its options (seconds in a debug build,
        // where it checks each option group at every walk): the other commands' options are read
        // only when something may name them, a configuration file or a variable this one lacks.
        let catalog = catalogs?.first { $0.command == command } ?? CommandOptions.of(command)
        self.command = command
        typed = arguments
        let scan = TypedArguments(arguments, catalog: catalog)
        terminated = scan.terminated

        let configEnvironment = CommandOptions.environmentName("config")
        let path = scan.configPath ?? environment[configEnvironment].flatMap { $0.isEmpty ? nil : $0 }
        configurationPath = path
        // IMAGEPIPE_CHECK_BLOCKING is no option: it makes blocking calls check where they run (tests).
        // IMAGEPIPE_NOTIFY_SECRET is none either: a secret belongs in the environment, never on a command line.
        // IMAGEPIPE_DURABILITY_FLUSH picks how rounds of syncs flush (SyncRound): a setting of the machine's disks, for tests and measurements.
        let notOptions = [configEnvironment, "IMAGEPIPE_CHECK_BLOCKING", "IMAGEPIPE_NOTIFY_SECRET", "IMAGEPIPE_DURABILITY_FLUSH"]
        func unknown(among catalogs: [CommandOptions]) -> [String] {
            let known = Set(catalogs.flatMap { $0.options.map(\.environmentName) } + notOptions)
            return environment.keys.filter { $0.hasPrefix(CommandOptions.environmentPrefix) && !known.contains($0) }.sorted()
        }
        let unknownHere = unknown(among: [catalog])
        let everyCatalog =
            path == nil && unknownHere.isEmpty
            ? [catalog] : catalogs ?? Self.commands.map { $0 == command ? catalog : CommandOptions.of($0) }
        unknownVariables = unknownHere.isEmpty ? [] : unknown(among: everyCatalog)
        let file = try path.map { (path) throws(ImagePipeError) in try ConfigurationFile(path: path, commands: everyCatalog) }
        presets = file?.presets ?? []
        presetArguments = presets.flatMap { preset in preset.specs.map { "--preset-variant=\(preset.name):\($0)" } }

        // Each option's candidates, highest precedence first.
        func candidates(_ option: CommandOptions.Option) throws(ImagePipeError) -> [Setting] {
            var found: [Setting] = []
            if let values = scan.given[option.key] { found.append(Setting(option: option, values: values, origin: .commandLine)) }
            if let text = environment[option.environmentName], !text.isEmpty {
                found.append(
                    Setting(
                        option: option, values: try Self.environmentValues(text, option: option),
                        origin: .environment(option.environmentName)))
            }
            if let file, let setting = file.setting(option.key, for: catalog.command) {
                found.append(
                    Setting(
                        option: option, values: setting.values,
                        origin: .file(path: file.path, line: setting.line, key: setting.writtenKey)))
            }
            return found
        }
        var resolved: [Setting] = []
        var candidatesByKey: [String: [Setting]] = [:]
        for option in catalog.options { candidatesByKey[option.key] = try candidates(option) }
        for option in catalog.options {
            var found = candidatesByKey[option.key] ?? []
            if let group = Self.linkedKeys.first(where: { $0.contains(option.key) }) {
                // The highest source that sets any member of the group is the only one considered.
                if let top = group.compactMap({ candidatesByKey[$0] }).joined().map(\.origin.rank).min() {
                    found = found.filter { $0.origin.rank == top }
                }
            }
            if option.kind == .positional && !scan.positionals.isEmpty {
                // Typed positionals are taken as they are, all of them by the first positional.
                let first = catalog.options.first { $0.kind == .positional }?.key == option.key
                resolved.append(Setting(option: option, values: first ? scan.positionals : [], origin: .commandLine))
            } else if let chosen = found.first {
                resolved.append(chosen)
            } else {
                resolved.append(Setting(option: option, values: option.defaultValue.map { [$0] } ?? [], origin: .defaultValue))
            }
        }
        settings = resolved
    }

    /// The full argument list for `ImagePipeCommand.parseAsRoot`.
    var arguments: [String] { arguments(omitting: nil) }

    /// The argument list without one setting from the environment or the file (to find which one
    /// argument-parser refused).
    func arguments(omitting key: String?) -> [String] {
        var options: [String] = []
        var positionals: [String] = []
        for setting in settings where setting.option.key != key {
            switch setting.origin {
            case .commandLine, .defaultValue: continue
            case .environment, .file: break
            }
            switch setting.option.kind {
            case .flag:
                if setting.values.first == "true" { options.append(setting.option.preferredSpelling) }
            case .option:
                options += setting.values.map { "\(setting.option.preferredSpelling)=\($0)" }
            case .positional:
                positionals += setting.values
            }
        }
        let tail = positionals.isEmpty ? [] : (terminated ? positionals : ["--"] + positionals)
        return [command] + presetArguments + options + typed + tail
    }

    /// The values an environment variable stands for: one value, several separated by spaces for a
    /// repeatable option, or a boolean for a flag.
    private static func environmentValues(_ text: String, option: CommandOptions.Option) throws(ImagePipeError) -> [String] {
        switch option.kind {
        case .flag:
            switch text.lowercased() {
            case "1", "true", "yes", "on": return ["true"]
            case "0", "false", "no", "off": return ["false"]
            default: throw .configuration("environment variable \(option.environmentName): expects true or false (or 1 or 0), not '\(text)'")
            }
        case .option, .positional:
            return option.isRepeating ? text.split(whereSeparator: \.isWhitespace).map(String.init) : [text]
        }
    }
}

extension ConfiguredCommandLine.Origin {
    /// Lower is stronger.
    fileprivate var rank: Int {
        switch self {
        case .commandLine: 0
        case .environment: 1
        case .file: 2
        case .defaultValue: 3
        }
    }
}
