// Parsing the completed command line, and blaming the file key or variable whose value argument-parser refused.
import ArgumentParser
import Foundation
import ImagePipe

extension ConfiguredCommandLine {
    /// The command, parsed and validated by argument-parser.
    ///
    /// When argument-parser refuses the line because of a value that came from the file or the
    /// environment, the error names that key and line or that variable instead of a flag nobody typed.
    func parse() throws -> any ParsableCommand {
        let full = arguments
        do {
            return try ImagePipeCommand.parseAsRoot(full)
        } catch {
            guard ImagePipeCommand.exitCode(for: error) != .success else { throw error }
            if let culprit = culprit(of: error) {
                let message = Self.firstLine(of: ImagePipeCommand.fullMessage(for: error))
                throw ImagePipeError.configuration("\(culprit.origin.description): \(message)")
            }
            throw error
        }
    }

    /// The setting from the environment or the file without which the error goes away or becomes
    /// another one (one not about that setting missing).
    private func culprit(of error: any Error) -> Setting? {
        let message = ImagePipeCommand.fullMessage(for: error)
        for setting in settings {
            switch setting.origin {
            case .environment, .file: break
            case .commandLine, .defaultValue: continue
            }
            do {
                _ = try ImagePipeCommand.parseAsRoot(arguments(omitting: setting.option.key))
                return setting
            } catch {
                let other = ImagePipeCommand.fullMessage(for: error)
                if other != message && !Self.mentions(Self.firstLine(of: other), setting.option) { return setting }
            }
        }
        return nil
    }

    /// Whether an error message names the option (as `--jobs` or `<queue>`).
    private static func mentions(_ message: String, _ option: CommandOptions.Option) -> Bool {
        let names = option.kind == .positional ? ["<\(option.key)>"] : option.spellings
        return names.contains { name in
            var rest = message[...]
            while let range = rest.range(of: name) {
                // `--key` must not match inside `--key-template`.
                let next = rest[range.upperBound...].first
                if next == nil || !(next!.isLetter || next!.isNumber || next! == "-") { return true }
                rest = rest[range.upperBound...]
            }
            return false
        }
    }

    /// argument-parser's first line without its `Error: ` prefix.
    static func firstLine(of message: String) -> String {
        var line = message.split(separator: "\n", omittingEmptySubsequences: true).first.map(String.init) ?? message
        if line.hasPrefix("Error: ") { line.removeFirst("Error: ".count) }
        return line
    }

    /// Says on standard error which `IMAGEPIPE_*` variables name no option: they are ignored, but a
    /// misspelt name should not go unnoticed. (The environment is shared with other programs, so
    /// this is a warning, where an unknown key in the file is an error.)
    func warnAboutUnknownVariables() {
        for name in unknownVariables {
            FileHandle.standardError.write(
                Data("imagepipe: warning: \(name) names no option of \(Self.spoken(Self.commands)); ignored\n".utf8))
        }
    }

    /// Names as a sentence says them: `batch`, `batch or watch`, `batch, watch or prune`.
    static func spoken(_ names: [String]) -> String {
        guard let last = names.last, names.count > 1 else { return names.first ?? "" }
        return names.dropLast().joined(separator: ", ") + " or " + last
    }
}
