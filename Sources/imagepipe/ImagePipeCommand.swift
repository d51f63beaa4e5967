// The `imagepipe` command and its entry point, mapping errors to exit statuses 1 and 2.
import ArgumentParser
import Foundation
import ImagePipe
import ImagePipeVips

struct ImagePipeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "imagepipe",
        abstract: "Turn original images into web variants and store them.",
        version: "0.1.0",
        subcommands: [BatchCommand.self, WatchCommand.self, BenchCommand.self])
}

@main
enum Main {
    static func main() async {
        Vips.tuneAllocator()
        do {
            var command = try ImagePipeCommand.parseAsRoot()
            if command is WatchCommand || command is BatchCommand { blockShutdownSignals() }
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let error as ImagePipeError {
            FileHandle.standardError.write(Data("imagepipe: error: \(error.reason)\n".utf8))
            exit(error.code == .configuration ? 2 : 1)
        } catch {
            if ImagePipeCommand.exitCode(for: error) == .validationFailure {
                let message = ImagePipeCommand.fullMessage(for: error)
                FileHandle.standardError.write(Data("\(message)\n".utf8))
                exit(2)
            }
            ImagePipeCommand.exit(withError: error)
        }
    }
}

/// Blocks SIGTERM and SIGINT in this thread and every thread started after it.
///
/// On Linux, Dispatch receives signals through a signalfd, which only sees signals that no thread
/// handles the default way; blocked everywhere, they reach the watch command's graceful shutdown
/// instead of killing the process (the watch command's graceful shutdown, the batch command's
/// interruption). Called before any other thread exists.
private func blockShutdownSignals() {
    var signals = sigset_t()
    sigemptyset(&signals)
    sigaddset(&signals, SIGTERM)
    sigaddset(&signals, SIGINT)
    pthread_sigmask(SIG_BLOCK, &signals, nil)
}
