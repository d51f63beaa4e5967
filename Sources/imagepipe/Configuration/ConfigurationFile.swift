// The `--config` file: every option of batch, watch and prune, per-command tables and named variant presets, checked key by key.
import Foundation
import ImagePipe
import ImagePipeTOML

/// A configuration file, read and checked against the options the commands declare.
///
/// Layout (TOML):
/// - top-level keys set an option of every command that has it (`jobs = 4`);
/// - `[batch]` and `[watch]` set options of that command only, over the top-level ones;
/// - `[presets]` names variant lists (`avatars = ["small=64x64,webp,q75,cover", ...]`) that
///   `--preset NAME` selects.
///
/// A key that names no option is an error, so a misspelt setting cannot go unnoticed; so is a value
/// of the wrong shape (a list for a single option, anything but true or false for a flag).
struct ConfigurationFile: Sendable {
    /// One setting from the file.
    struct Setting: Sendable {
        /// The command-line tokens it stands for (values of an option, or one boolean for a flag).
        var values: [String]
        /// The line it is on.
        var line: Int
        /// The key as written, with its table (`watch.max-attempts`).
        var writtenKey: String
    }

    /// The file's path, as given.
    let path: String
    /// Settings by command table (`""` for the top level), then by normalized key.
    private let settings: [String: [String: Setting]]
    /// Presets by name, each a list of variant specs, in file order.
    let presets: [(name: String, specs: [String], line: Int)]

    /// The setting for `key` that applies to `command`: its own table's, else the top level's.
    func setting(_ key: String, for command: String) -> Setting? {
        settings[command]?[key] ?? settings[""]?[key]
    }

    /// Reads and checks `path` against the commands' options.
    init(path: String, commands: [CommandOptions]) throws(ImagePipeError) {
        // Opened here, so the reason is the system's own ("No such file or directory", "Permission denied").
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw .configuration("cannot read the configuration file \(path): \(String(cString: strerror(errno)))")
        }
        let data: Data
        do {
            // One byte past the limit tells a file that is too long, however long (/dev/zero) it is.
            let file = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
            data = try file.read(upToCount: ConfigurationDocument.maxBytes + 1) ?? Data()
        } catch {
            throw .configuration("cannot read the configuration file \(path): \(IOErrorText.reason(of: error))")
        }
        guard data.count <= ConfigurationDocument.maxBytes else { throw .configuration("\(ConfigurationDocument.tooLarge(path))") }
        guard let text = String(data: data, encoding: .utf8) else {
            throw .configuration("the configuration file \(path) is not UTF-8 text")
        }
        let root: ConfigurationTable
        do { root = try ConfigurationDocument.parse(text, path: path) } catch { throw .configuration("\(error)") }
        self.path = path
        let commandNames = commands.map(\.command)
        var settings: [String: [String: Setting]] = [:]
        var presets: [(name: String, specs: [String], line: Int)] = []
        var topLevel = ConfigurationTable()
        for entry in root.entries {
            if commandNames.contains(entry.key) {
                guard case .table(let table) = entry.value.content else {
                    throw Self.error(path, entry.value.line, entry.key, "expects a table ([\(entry.key)]), not \(entry.value.typeName)")
                }
                let command = commands.first { $0.command == entry.key }!
                settings[entry.key] = try Self.settings(table, path: path, table: entry.key, options: [command])
            } else if entry.key == "presets" {
                guard case .table(let table) = entry.value.content else {
                    throw Self.error(path, entry.value.line, entry.key, "expects a table ([presets]), not \(entry.value.typeName)")
                }
                presets = try Self.presets(table, path: path)
            } else {
                topLevel.entries.append(entry)
            }
        }
        settings[""] = try Self.settings(topLevel, path: path, table: nil, options: commands)
        self.settings = settings
        self.presets = presets
    }

    /// The settings of one table, each checked against the options of `options`' commands.
    private static func settings(
        _ table: ConfigurationTable, path: String, table name: String?,
        options: [CommandOptions]
    ) throws(ImagePipeError) -> [String: Setting] {
        var result: [String: Setting] = [:]
        for entry in table.entries {
            let qualified = name.map { "\($0).\(entry.key)" } ?? entry.key
            let key = CommandOptions.normalizedKey(entry.key)
            if key == "config" {
                throw error(path, entry.value.line, qualified, "a configuration file cannot name another one")
            }
            guard let option = options.lazy.compactMap({ $0.option(key) }).first else {
                let where_ = name.map { "of \($0)" } ?? "of " + ConfiguredCommandLine.spoken(options.map(\.command))
                let known = options.flatMap { $0.options.map(\.key) }
                let hint = NameSuggestion.hint(for: key, among: known)
                throw error(path, entry.value.line, qualified, "names no option \(where_)\(hint)")
            }
            if let earlier = result[key] {
                throw error(path, entry.value.line, qualified, "sets the same option as '\(earlier.writtenKey)' on line \(earlier.line)")
            }
            let values = try tokens(entry.value, option: option, path: path, key: qualified)
            result[key] = Setting(values: values, line: entry.value.line, writtenKey: qualified)
        }
        return result
    }

    /// The command-line values a file value stands for.
    private static func tokens(
        _ value: ConfigurationValue, option: CommandOptions.Option, path: String,
        key: String
    ) throws(ImagePipeError) -> [String] {
        if option.kind == .flag {
            guard case .boolean(let on) = value.content else {
                throw error(path, value.line, key, "expects true or false, not \(value.typeName)")
            }
            return [on ? "true" : "false"]
        }
        switch value.content {
        case .array(let elements):
            guard option.isRepeating else {
                throw error(path, value.line, key, "takes one value, not an array")
            }
            var result: [String] = []
            for element in elements {
                guard let scalar = scalarText(element) else {
                    throw error(path, element.line, key, "expects an array of strings or numbers, not one holding \(element.typeName)")
                }
                result.append(scalar)
            }
            return result
        default:
            guard let scalar = scalarText(value) else {
                throw error(path, value.line, key, "expects a value, not \(value.typeName)")
            }
            return [scalar]
        }
    }

    /// A string, number or boolean as the command line would spell it.
    private static func scalarText(_ value: ConfigurationValue) -> String? {
        switch value.content {
        case .string(let text): text
        case .integer(let number): String(number)
        case .float(let number): String(number)
        case .boolean(let flag): flag ? "true" : "false"
        case .array, .table: nil
        }
    }

    /// `[presets]`: each key a preset name, each value a variant spec or an array of them, checked now.
    private static func presets(_ table: ConfigurationTable, path: String) throws(ImagePipeError) -> [(name: String, specs: [String], line: Int)] {
        var result: [(name: String, specs: [String], line: Int)] = []
        for entry in table.entries {
            let key = "presets.\(entry.key)"
            guard entry.key.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else {
                throw error(path, entry.value.line, key, "a preset name has only letters, digits, '-' and '_'")
            }
            if Preset.names.contains(entry.key) {
                throw error(path, entry.value.line, key, "'\(entry.key)' is a built-in preset; give yours another name")
            }
            let values: [ConfigurationValue]
            switch entry.value.content {
            case .array(let elements): values = elements
            case .string: values = [entry.value]
            default: throw error(path, entry.value.line, key, "expects an array of variant specs, not \(entry.value.typeName)")
            }
            var specs: [String] = []
            var variants: [VariantSpec] = []
            for value in values {
                guard case .string(let spec) = value.content else {
                    throw error(path, value.line, key, "expects variant specs as strings, not \(value.typeName)")
                }
                do {
                    variants.append(try VariantSpec(parsing: spec))
                    specs.append(spec)
                } catch {
                    throw Self.error(path, value.line, key, error.reason)
                }
            }
            do {
                try Preset.validate(variants)
            } catch {
                throw Self.error(path, entry.value.line, key, error.reason)
            }
            result.append((entry.key, specs, entry.value.line))
        }
        return result
    }

    static func error(_ path: String, _ line: Int, _ key: String, _ reason: String) -> ImagePipeError {
        .configuration("\(path):\(line): \(key): \(reason)")
    }
}
