// The options and arguments a subcommand declares, read from argument-parser's own description of it.
import ArgumentParser
import Foundation
import ImagePipe

/// Everything a command accepts, as argument-parser describes it (`--experimental-dump-help`), so
/// the configuration file and the `IMAGEPIPE_*` variables cover every option a command declares,
/// including options added later, without a list kept by hand.
struct CommandOptions: Sendable {
    /// One option, flag or positional argument.
    struct Option: Sendable {
        enum Kind: String, Sendable, Decodable {
            case positional, option, flag
        }

        /// Its configuration key: the long name (`max-attempts`), or a positional's value name (`queue`).
        var key: String
        var kind: Kind
        /// Whether it may be given several times (`--variant`), or takes several values (`source...`).
        var isRepeating: Bool
        /// Every spelling on the command line: `--jobs`, `-h`.
        var spellings: [String]
        /// The default argument-parser shows, if any.
        var defaultValue: String?
        /// Its one-line help.
        var abstract: String?

        /// The environment variable that sets it: `IMAGEPIPE_MAX_ATTEMPTS`.
        var environmentName: String { CommandOptions.environmentName(key) }

        /// The spelling used to pass it to the parser.
        var preferredSpelling: String { spellings.first ?? "--" + key }
    }

    /// The command's name: `batch`, `watch`.
    let command: String
    /// Its options in declaration order, without help, version and the configuration file itself.
    let options: [Option]

    /// The keys no configuration may set: the file's own name, argument-parser's built-in flags, and
    /// `prune --delete`, which removes objects and so is only ever typed (a `delete = true` left in a
    /// file, or an `IMAGEPIPE_DELETE` in a service's environment, would turn every listing into a deletion).
    static let reservedKeys: Set<String> = [
        "config", "help", "version", "experimental-dump-help", "generate-completion-script", "delete",
    ]

    /// The environment variables' common prefix.
    static let environmentPrefix = "IMAGEPIPE_"

    /// `IMAGEPIPE_` and the key in capitals with underscores.
    static func environmentName(_ key: String) -> String {
        environmentPrefix + key.uppercased().replacingOccurrences(of: "-", with: "_")
    }

    /// A key as written in a file (`max_attempts` or `max-attempts`) in its one form (`max-attempts`).
    static func normalizedKey(_ key: String) -> String {
        key.replacingOccurrences(of: "_", with: "-")
    }

    /// The option with this key, if the command has one.
    func option(_ key: String) -> Option? { options.first { $0.key == key } }

    /// The options of `command`, a subcommand of `imagepipe`.
    static func of(_ command: String) -> CommandOptions {
        // argument-parser answers a dump request as it answers --help: by throwing a "message" whose
        // text is the JSON description of the command.
        // Asked of the subcommand alone: through the root, argument-parser walks the root's options too.
        guard let type = ImagePipeCommand.configuration.subcommands.first(where: { $0._commandName == command }) else {
            preconditionFailure("imagepipe has no command \(command)")
        }
        let json: String
        do {
            _ = try type.parseAsRoot(["--experimental-dump-help"])
            preconditionFailure("argument-parser did not describe \(command)")
        } catch {
            json = type.fullMessage(for: error)
        }
        guard let description = try? JSONDecoder().decode(ToolDescription.self, from: Data(json.utf8)) else {
            preconditionFailure("cannot read argument-parser's description of \(command)")
        }
        let options = (description.command.arguments ?? []).compactMap { argument -> Option? in
            // Hidden options carry values between imagepipe's own layers, not settings.
            guard argument.shouldDisplay else { return nil }
            let spellings = (argument.names ?? []).map { name in
                switch name.kind {
                case "long": "--" + name.name
                case "short": "-" + name.name
                default: "-" + name.name
                }
            }
            let long =
                argument.preferredName.flatMap { $0.kind == "long" ? $0.name : nil }
                ?? argument.names?.first { $0.kind == "long" }?.name
            guard let key = argument.kind == .positional ? argument.valueName : long, !reservedKeys.contains(key) else { return nil }
            return Option(
                key: key, kind: argument.kind, isRepeating: argument.isRepeating, spellings: spellings,
                defaultValue: argument.defaultValue, abstract: argument.abstract)
        }
        return CommandOptions(command: command, options: options)
    }
}

/// The part of argument-parser's `ToolInfoV0` JSON that configuration needs.
private struct ToolDescription: Decodable {
    struct Command: Decodable {
        var arguments: [Argument]?
    }

    struct Argument: Decodable {
        struct Name: Decodable {
            var kind: String
            var name: String
        }

        var kind: CommandOptions.Option.Kind
        var shouldDisplay: Bool
        var isRepeating: Bool
        var names: [Name]?
        var preferredName: Name?
        var valueName: String?
        var defaultValue: String?
        var abstract: String?
    }

    var command: Command
}
