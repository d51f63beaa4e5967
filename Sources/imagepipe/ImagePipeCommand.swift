// The `imagepipe` command and its entry point, mapping errors to exit statuses 1 and 2.
import ArgumentParser
import Foundation
import ImagePipe
import ImagePipeVips

struct ImagePipeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "imagepipe",
        abstract: "Turn original images into web variants and store them.",
        version: "0.2.0",
        subcommands: [
            BatchCommand.self, WatchCommand.self, PruneCommand.self, RetryCommand.self, EnqueueCommand.self, QueueCommand.self,
            BenchCommand.self, SrcsetCommand.self, ReportCommand.self, DuplicatesCommand.self, ConfigCommand.self, VersionCommand.self,
            ImageHelperCommand.self,
        ])
}

@main
enum Main {
    static func main() async {
        Vips.tuneAllocator()
        BlockingIO.checkConditionWaitsWhenAsked()
        do {
            var command = try parse(Array(CommandLine.arguments.dropFirst()))
            if command is WatchCommand || command is BatchCommand { blockStopSignals() }
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let error as ImagePipeError {
            FileHandle.standardError.write(Data("imagepipe: error: \(error.reason)\n".utf8))
            exit(error.code == .configuration ? 2 : 1)
        } catch {
            // Help and version are answered as argument-parser writes them; its errors begin as
            // every other error line does, so one prefix finds them all in a log.
            let code = ImagePipeCommand.exitCode(for: error)
            guard code != .success else { ImagePipeCommand.exit(withError: error) }
            var message = ImagePipeCommand.fullMessage(for: error)
            if message.hasPrefix("Error: ") { message = "imagepipe: error: " + message.dropFirst("Error: ".count) }
            // An exit status alone (`ExitCode(1)` after a summary) has nothing to say.
            if !message.isEmpty { FileHandle.standardError.write(Data("\(message)\n".utf8)) }
            exit(code == .validationFailure ? 2 : code.rawValue)
        }
    }
}

/// The command to run: batch and watch complete their command line from `IMAGEPIPE_*` variables
/// and the `--config` file (see ``ConfiguredCommandLine``); help requests are answered as typed.
private func parse(_ arguments: [String]) throws -> any ParsableCommand {
    let helpRequests: Set = ["--help", "-h", "--experimental-dump-help"]
    try checkSubcommand(arguments.first)
    guard let name = arguments.first, ConfiguredCommandLine.commands.contains(name),
        !arguments.contains(where: helpRequests.contains)
    else {
        return try ImagePipeCommand.parseAsRoot(arguments)
    }
    let line = try ConfiguredCommandLine(command: name, arguments: Array(arguments.dropFirst()))
    line.warnAboutUnknownVariables()
    return try line.parse()
}

/// Refuses a first word that names no command, before argument-parser reads it: the root command takes
/// no arguments, so it would report the first option after the misspelt command (`imagepipe bach photos
/// --dest x` said "Unknown option '--dest'") instead of the command itself.
private func checkSubcommand(_ word: String?) throws(ImagePipeError) {
    guard let word, !word.hasPrefix("-") else { return }
    let commands = ImagePipeCommand.configuration.subcommands
    guard !commands.map({ $0._commandName }).contains(word), word != "help" else { return }
    // The hidden image-helper command is for workers to start, not for people to be offered.
    let names = commands.filter { $0.configuration.shouldDisplay }.map { $0._commandName }
    throw .configuration(
        "unknown command '\(word)' (commands: \(names.joined(separator: ", ")); imagepipe --help tells what each does)"
            + NameSuggestion.hint(for: word, among: names))
}

/// Blocks SIGTERM, SIGINT and SIGHUP in this thread and every thread started after it, and ignores
/// SIGPIPE.
///
/// On Linux, Dispatch receives signals through a signalfd, which only sees signals that no thread
/// handles the default way; blocked everywhere, they reach the `batch` and `watch` commands' stop
/// (see `StopSignals`) instead of killing the process. A worker whose log went to a pipe that closed with the session must not die on its next
/// log line either. Called before any other thread exists.
private func blockStopSignals() {
    var signals = sigset_t()
    sigemptyset(&signals)
    for stop in [SIGTERM, SIGINT, SIGHUP] { sigaddset(&signals, stop) }
    pthread_sigmask(SIG_BLOCK, &signals, nil)
    signal(SIGPIPE, SIG_IGN)
}
