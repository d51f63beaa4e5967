// `imagepipe config`: the configuration batch or watch would run with, checked, printed with secrets masked.
import ArgumentParser
import Foundation

struct ConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Print the configuration batch or watch would run with, checked, with secrets masked.",
        discussion: """
            Give the command (default: watch) and whatever would follow it: imagepipe config watch --config \
            /etc/imagepipe/imagepipe.toml. Each option is taken from the command line, else its IMAGEPIPE_<NAME> \
            variable (IMAGEPIPE_MAX_ATTEMPTS for --max-attempts; a repeatable option takes several values \
            separated by spaces; a flag takes true or false), else the configuration file, else its default. \
            The output is itself a configuration file, with each setting's source in a comment; passwords \
            in URLs and credential variables are masked.
            Besides the options, it checks what the run checks before its first job without asking a server: \
            that batch's sources exist, that no source is an unsupported URL, that the destination's and the \
            sources' stores have their settings and credentials in the environment. What needs a server (the \
            store or the database answers) is listed at the end as not checked.
            Exit status: 0 when the configuration is valid, 2 when it is not (the error names the file, \
            line and key, or the variable).
            """)

    @Argument(
        parsing: .captureForPassthrough,
        help: ArgumentHelp(
            "batch or watch (default: watch), then its options and arguments.", valueName: "command"))
    var arguments: [String] = []

    func run() throws {
        // Everything after `config` is the command's, but a help request (`config --help`, `config
        // watch --help`) is this command's own: it has no configuration to print.
        if arguments.prefix(2).contains(where: { $0 == "--help" || $0 == "-h" }) {
            print(ImagePipeCommand.helpMessage(for: Self.self))
            return
        }
        let environment = ProcessInfo.processInfo.environment
        var rest = arguments
        let command = rest.first.flatMap { ConfiguredCommandLine.commands.contains($0) ? $0 : nil } ?? "watch"
        if rest.first == command { rest.removeFirst() }
        let line = try ConfiguredCommandLine(command: command, arguments: rest, environment: environment)
        // Nothing typed, no file and no variable: there is no configuration to check, and watch's own
        // usage (what a bare `watch` says) would not tell how to use this command.
        if arguments.isEmpty, line.configurationPath == nil, line.settings.allSatisfy({ $0.origin == .defaultValue || $0.values.isEmpty }) {
            FileHandle.standardError.write(
                Data(
                    "imagepipe config: nothing to check: give batch or watch and its options\n\n\(ImagePipeCommand.helpMessage(for: Self.self))\n"
                        .utf8))
            throw ExitCode(2)
        }
        line.warnAboutUnknownVariables()
        // The same checks the command itself makes before it starts.
        let parsed = try line.parse()
        // And what the run checks before its first job, short of asking a server; what is left is said.
        let unchecked = try Self.checkBeforeRun(parsed)
        print(ConfigurationReport(line: line, environment: environment).text)
        if !unchecked.isEmpty {
            print("# Not checked here (they need the server to answer; the run checks them when it starts):")
            for item in unchecked { print("#   \(item)") }
        }
    }
}
