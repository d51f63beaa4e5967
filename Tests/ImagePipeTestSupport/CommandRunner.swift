// The tests' one way to run the built `imagepipe` (and oracle executables) and capture its exit status and output.
public import Foundation
import Synchronization

/// Runs the `imagepipe` binary built beside the test bundle (or the one named by `IMAGEPIPE_BIN`).
public enum CommandRunner {
    /// What a run printed and how it ended.
    public struct Output: Sendable {
        /// The exit status.
        public var status: Int32
        /// Standard output.
        public var stdout: String
        /// Standard error.
        public var stderr: String
    }

    /// The executable under test.
    public static let binary: String = {
        if let path = ProcessInfo.processInfo.environment["IMAGEPIPE_BIN"] { return path }
        return URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("imagepipe").path
    }()

    /// The absolute path of `fixtures/`.
    public static var fixtures: String { Fixtures.root }

    /// Copies a fixture into a directory under a new relative name.
    public static func copyFixture(_ relative: String, to directory: TemporaryDirectory, as name: String) {
        directory.write(name, Fixtures.data(relative))
    }

    /// Runs `imagepipe arguments` to completion.
    ///
    /// - Parameters:
    ///   - directory: the working directory (default: the test's).
    ///   - environment: when given, replaces every `AWS_*`, `SUPABASE_*` and `IMAGEPIPE_*` variable of
    ///     the test's environment, so stray credentials or settings never leak into a run.
    ///   - input: what the process reads on standard input (default: nothing, end of file at once).
    public static func run(
        _ arguments: [String], in directory: String? = nil, environment: [String: String]? = nil,
        input: Data? = nil, timeout: Duration = defaultTimeout
    ) throws -> Output {
        try run(executable: binary, arguments, in: directory, environment: environment, input: input, timeout: timeout)
    }

    /// How long a run may take before it is killed and its test fails: far beyond any run's time
    /// here, so only a hang reaches it, and then the test fails naming the command instead of
    /// holding the whole suite until CI's own limit ends it without a word.
    public static let defaultTimeout: Duration = .seconds(600)

    /// A run killed at its deadline.
    public struct TimedOut: Error, CustomStringConvertible {
        public var command: [String]
        public var timeout: Duration
        public var stdout: String
        public var stderr: String
        public var description: String {
            "\(command.joined(separator: " ")) ran past \(timeout) and was killed; it printed:\n\(stdout.suffix(2000))\n\(stderr.suffix(4000))"
        }
    }

    /// The standard output of `program` (looked up on PATH), trimmed; nil when it is missing or fails.
    public static func output(of program: String, _ arguments: [String]) -> String? {
        guard let result = try? run(executable: "/usr/bin/env", [program] + arguments), result.status == 0 else { return nil }
        let text = result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? nil : text
    }

    /// Runs another executable (an oracle such as `python3`) the same way.
    public static func run(
        executable: String, _ arguments: [String], in directory: String? = nil,
        environment: [String: String]? = nil, input: Data? = nil, timeout: Duration = defaultTimeout
    ) throws -> Output {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        var base = ProcessInfo.processInfo.environment
        if let environment {
            base = base.filter { !$0.key.hasPrefix("AWS_") && !$0.key.hasPrefix("SUPABASE_") && !$0.key.hasPrefix("IMAGEPIPE_") }
            base.merge(environment) { $1 }
        }
        process.environment = checkingBlocking(base)
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let stdin = Pipe()
        process.standardInput = input == nil ? FileHandle.nullDevice : stdin
        try process.run()
        if let input {
            // Written from another thread, so a process that writes much before reading cannot deadlock.
            DispatchQueue.global().async {
                stdin.fileHandleForWriting.write(input)
                try? stdin.fileHandleForWriting.close()
            }
        }
        // Both pipes are drained while the process runs, so a full pipe cannot block it.
        let outData = Captured(), errData = Captured()
        let group = DispatchGroup()
        DispatchQueue.global().async(group: group) { outData.set(out.fileHandleForReading.readDataToEndOfFile()) }
        DispatchQueue.global().async(group: group) { errData.set(err.fileHandleForReading.readDataToEndOfFile()) }
        // Killed only while Foundation still counts it running, under the lock its end takes too,
        // so a process reaped meanwhile (its pid free for reuse) is never signalled.
        let ended = Mutex<(ended: Bool, killed: Bool)>((false, false))
        let pid = process.processIdentifier
        DispatchQueue.global().asyncAfter(deadline: .now() + Double(timeout.components.seconds)) {
            ended.withLock { state in
                guard !state.ended, process.isRunning else { return }
                state.killed = true
                kill(pid, SIGKILL)
            }
        }
        let status = waitForExit(process)
        let killed = ended.withLock { state in
            state.ended = true
            return state.killed
        }
        group.wait()
        let output = Output(
            status: status, stdout: String(decoding: outData.get(), as: UTF8.self),
            stderr: String(decoding: errData.get(), as: UTF8.self))
        if killed { throw TimedOut(command: [executable] + arguments, timeout: timeout, stdout: output.stdout, stderr: output.stderr) }
        return output
    }
}

/// The exit status of `process` (its signal's number if a signal ended it, as Foundation gives it).
///
/// Foundation learns of a child's end from SIGCHLD, and once missed one: a fresh clone's `make test`
/// hung for twenty minutes in `waitUntilExit` beside an `imagepipe` left a zombie, reaped by no one.
/// So the end is waited for here with `waitid(WNOWAIT)`, which leaves the child to Foundation to
/// reap; Foundation then has ten seconds to see it, and if it has not, the child is reaped here.
private func waitForExit(_ process: Process) -> Int32 {
    if let status = reapedUnseen(process) { return status }
    process.waitUntilExit()
    return process.terminationStatus
}

/// The status of `process` reaped here, once it has ended and Foundation has not seen it end in
/// ten seconds; nil when Foundation has (or reaped it first: `waitid` and `waitpid` find no child).
private func reapedUnseen(_ process: Process) -> Int32? {
    let pid = process.processIdentifier
    var info = siginfo_t()
    var seen = waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT)
    while seen == -1 && errno == EINTR { seen = waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) }
    guard seen == 0 else { return nil }
    let deadline = ContinuousClock.now + .seconds(10)
    while process.isRunning && ContinuousClock.now < deadline { usleep(10_000) }
    var status: Int32 = 0
    guard process.isRunning, waitpid(pid, &status, 0) == pid else { return nil }
    let signal = status & 0x7f
    return signal == 0 ? (status >> 8) & 0xff : signal
}

/// Bytes handed from a reader thread to the caller.
private final class Captured: Sendable {
    private let data = Mutex(Data())
    func set(_ value: Data) { data.withLock { $0 = value } }
    func get() -> Data { data.withLock { $0 } }
}

/// `environment` with imagepipe's check of its concurrency rule on: a blocking call that runs on
/// Swift's cooperative pool stops the binary, naming the call (see `BlockingIO.mayBlock`).
public func checkingBlocking(_ environment: [String: String]) -> [String: String] {
    environment.merging(["IMAGEPIPE_CHECK_BLOCKING": "1"]) { $1 }
}
