// What was typed after `imagepipe batch|watch`: which options were given, their values, the positionals.

/// The typed arguments of a command, read with the command's option list: enough to know which
/// settings the command line already decides (they beat the environment and the file) and whether
/// positionals were given. Anything this reading does not recognise is left to argument-parser.
struct TypedArguments {
    /// Values of each option typed, by key (`["true"]` for a flag).
    private(set) var given: [String: [String]] = [:]
    /// The positional arguments.
    private(set) var positionals: [String] = []
    /// Whether `--` ended the options.
    private(set) var terminated = false
    /// The `--config` value, if typed.
    private(set) var configPath: String?

    init(_ arguments: [String], catalog: CommandOptions) {
        var index = 0
        func option(spelled spelling: String) -> CommandOptions.Option? {
            catalog.options.first { $0.spellings.contains(spelling) }
        }
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if terminated {
                positionals.append(argument)
                continue
            }
            if argument == "--" {
                terminated = true
                continue
            }
            guard argument.hasPrefix("-"), argument.count > 1 else {
                positionals.append(argument)
                continue
            }
            let (spelling, inline) =
                argument.hasPrefix("--")
                ? argument.firstIndex(of: "=").map { (String(argument[..<$0]), String(argument[argument.index(after: $0)...])) } ?? (argument, nil)
                : (argument, nil)
            if spelling == "--config" {
                configPath = inline ?? (index < arguments.count ? arguments[index] : nil)
                if inline == nil { index += 1 }
                continue
            }
            guard let known = option(spelled: spelling) else { continue }
            switch known.kind {
            case .flag:
                given[known.key, default: []].append("true")
            case .option:
                let value = inline ?? (index < arguments.count ? arguments[index] : nil)
                if inline == nil { index += 1 }
                if let value { given[known.key, default: []].append(value) }
            case .positional:
                break
            }
        }
    }
}
