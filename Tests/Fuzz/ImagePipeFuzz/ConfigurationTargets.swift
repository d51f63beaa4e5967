// Fuzz targets for what people and deploy tools write: the TOML configuration, the AWS files, variant specs.
import Foundation
import ImagePipe
import ImagePipeRemoteStorage
import ImagePipeTOML

enum ConfigurationTargets {
    /// The `--config` file: refused unless UTF-8, as the command line reads it, then parsed.
    static func toml(_ data: Data) {
        guard let text = String(data: data, encoding: .utf8) else { return }
        do {
            let table = try ConfigurationDocument.parse(text, path: "fuzz.toml")
            // Every line a value names is one of the file's.
            let lines = text.utf8.reduce(1) { $1 == UInt8(ascii: "\n") ? $0 + 1 : $0 }
            visit(table) { value in require(value.line >= 1 && value.line <= lines, "value on line \(value.line) of \(lines)") }
        } catch {
            require(error.path == "fuzz.toml" && !error.reason.isEmpty, "unexpected error: \(error)")
        }
    }

    private static func visit(_ table: ConfigurationTable, _ body: (ConfigurationValue) -> Void) {
        for entry in table.entries { visit(entry.value, body) }
    }

    private static func visit(_ value: ConfigurationValue, _ body: (ConfigurationValue) -> Void) {
        body(value)
        switch value.content {
        case .array(let elements): for element in elements { visit(element, body) }
        case .table(let table): visit(table, body)
        default: break
        }
    }

    /// `~/.aws/credentials` and `~/.aws/config`, decoded as the loader decodes them.
    static func awsConfig(_ data: Data) {
        let file = INIFile(parsing: String(decoding: data, as: UTF8.self))
        for (name, section) in file.sections {
            require(!name.hasPrefix(" ") && !name.hasSuffix(" "), "section name '\(name)' keeps its spaces")
            for (key, value) in section {
                require(key == key.lowercased() && !value.isEmpty, "key '\(key)' = '\(value)'")
            }
        }
    }

    /// `--variant` and the specs of configuration presets: what parses gives itself back from its spec string.
    static func variantSpec(_ data: Data) {
        let text = String(decoding: data, as: UTF8.self)
        guard let spec = try? VariantSpec(parsing: text) else { return }
        do {
            let again = try VariantSpec(parsing: spec.specString)
            require(again == spec, "'\(text)' gives '\(spec.specString)', which reads back as '\(again.specString)'")
        } catch {
            fatalError("'\(text)' gives '\(spec.specString)', which does not parse: \(error)")
        }
    }
}
