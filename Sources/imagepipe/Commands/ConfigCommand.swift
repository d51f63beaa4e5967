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
            Exit status: 0 when the configuration is valid, 2 when it is not (the error names the file, \
            line and key, or the variable).
            """)

    @Argument(
        parsing: .captureForPassthrough,
        help: ArgumentHelp(
            "batch or watch (default: watch), then its options and arguments.", valueName: "command"))
    var arguments: [String] = []

    func run() throws {
        // Everything after `config` is the command's, but a help request is this command's own.
        if arguments.first == "--help" || arguments.first == "-h" {
            print(Self.helpMessage())
            return
        }
        var rest = arguments
        let command = rest.first.flatMap { ConfiguredCommandLine.commands.contains($0) ? $0 : nil } ?? "watch"
        if rest.first == command { rest.removeFirst() }
        let environment = ProcessInfo.processInfo.environment
        let line = try ConfiguredCommandLine(command: command, arguments: rest, environment: environment)
        line.warnAboutUnknownVariables()
        // The same checks the command itself makes before it starts.
        _ = try line.parse()
        print(ConfigurationReport(line: line, environment: environment).text)
    }
}
