// The queues the command line knows: the one list of drivers, and the one place a queue argument is read.
import ArgumentParser
import Foundation
import ImagePipe
import ImagePipePostgres
import ImagePipeQueue
import Logging

/// Every kind of queue, by its driver: adding a queue is a driver here (see ``QueueDriver``).
enum QueueDrivers {
    /// URL schemes first; the queue directory takes what is no URL.
    static let all: [any QueueDriver.Type] = [PostgresDriver.self, DirectoryDriver.self]

    /// The kind of queue `text` names. A URL no driver takes is an error naming its scheme, not a
    /// directory called `mysql:`: no queue directory is meant to be spelled as a URL.
    static func kind(of text: String) throws(ImagePipeError) -> any QueueDriver.Type {
        if let driver = all.first(where: { $0.accepts(text) }) { return driver }
        let scheme = text.range(of: "://").map { text[..<$0.lowerBound].lowercased() } ?? text
        // Only the scheme is named: an unknown database URL may carry a password.
        throw .configuration(
            "unsupported queue scheme '\(scheme)://'; a queue is a directory path or postgres://USER@HOST:PORT/DATABASE?queue=NAME")
    }

    /// The queue `text` names: for a worker (`creating`), or for a command that looks after a
    /// queue, which must exist. Admin commands log only warnings.
    static func open(_ text: String, creating: Bool = false, logger: Logger? = nil) throws(ImagePipeError) -> any QueueDriver {
        try kind(of: text).init(text, creating: creating, logger: logger ?? CompositionRoot.bootstrapLogging(level: "warning"))
    }
}

extension AdminReport {
    /// Prints the lines for scripts on standard output, the problems and the summary on standard
    /// error; exits 1 when something asked for was not done.
    static func print(_ report: AdminReport) throws {
        if !report.lines.isEmpty { FileHandle.standardOutput.write(Data(report.lines.map { $0 + "\n" }.joined().utf8)) }
        let errors = report.problems + (report.summary.map { [$0] } ?? [])
        FileHandle.standardError.write(Data(errors.map { "imagepipe: \($0)\n" }.joined().utf8))
        if !report.problems.isEmpty { throw ExitCode(1) }
    }
}
