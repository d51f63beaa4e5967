// A long-running `imagepipe` process (a watch-mode worker) whose standard error goes to a file.
public import Foundation

/// A long-running `imagepipe` process (watch mode) whose standard error goes to a file.
// Its properties are set once in init; Process may be queried and signalled from any thread.
public final class WorkerProcess: @unchecked Sendable {
    /// The process.
    public let process = Process()
    /// Where its standard error goes.
    public let logPath: String
    /// Its standard input, when it was started with one to write to (else /dev/null).
    public let input: FileHandle?

    /// Starts `imagepipe` with `arguments`; as the user `nobody` when `asNobody` (the caller must be root),
    /// or through `launcher` (e.g. `ip netns exec NAME`) when given.
    /// `environment` replaces the test's `AWS_*` variables when given; with `writableInput`, ``input``
    /// writes to its standard input; `directory` is its working directory (the test's when nil).
    public init(
        _ arguments: [String], log: String, asNobody: Bool = false, launcher: [String] = [],
        environment: [String: String]? = nil, writableInput: Bool = false, in directory: String? = nil
    ) throws {
        logPath = log
        let pipe = writableInput ? Pipe() : nil
        input = pipe?.fileHandleForWriting
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        if let program = launcher.first {
            process.executableURL = URL(fileURLWithPath: program)
            process.arguments = Array(launcher.dropFirst()) + [CommandRunner.binary] + arguments
        } else if asNobody {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            process.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", CommandRunner.binary] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: CommandRunner.binary)
            process.arguments = arguments
        }
        var base = ProcessInfo.processInfo.environment
        if let environment { base = base.filter { !$0.key.hasPrefix("AWS_") }.merging(environment) { $1 } }
        process.environment = checkingBlocking(base)
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        if let pipe { process.standardInput = pipe }
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        try process.run()
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    /// What it logged so far.
    public var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Sends it a signal.
    public func send(_ signal: Int32) { kill(process.processIdentifier, signal) }

    /// The exit status, or nil if the process is still running after `seconds` (a deadline, not a measurement).
    public func waitForExit(seconds: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        guard !process.isRunning else { return nil }
        return process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
    }

    /// Waits until the log contains `text`.
    @discardableResult
    public func waitForLog(_ text: String, seconds: Double = 30) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if log.contains(text) { return true }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return false
    }
}
