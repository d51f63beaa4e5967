// Runs commands as child processes and measures their wall time, CPU time and peak resident memory.
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// What one measured run took.
public struct RunMeasurement: Sendable, Codable, Equatable {
    /// Wall time in seconds.
    public var seconds: Double
    /// The largest peak resident set of any process of the run, in bytes.
    public var peakResidentBytes: Int
    /// Whether every process exited with status 0.
    public var succeeded: Bool
    /// User plus system CPU time in seconds, summed over the run's processes. wait4 reports each
    /// one's own time and that of the descendants it waited for (a script's worker pool), but not
    /// that of a server it talks to (PostgreSQL for the queue rows).
    public var cpuSeconds: Double = 0

    enum CodingKeys: String, CodingKey {
        case seconds, peakResidentBytes = "peak_rss_bytes", succeeded, cpuSeconds = "cpu_seconds"
    }
}

/// Spawns processes with posix_spawn and reaps them with wait4, which reports their peak memory and CPU time.
public enum ProcessRunner {
    /// Runs `commands` with at most `parallel` at a time and waits for all of them.
    ///
    /// - Parameters:
    ///   - environment: extra variables on top of this process's environment.
    ///   - output: a file receiving every process's standard output and error (nil: /dev/null).
    ///   - timeout: after this long, every process still running (with its children) is killed and
    ///     the run counts as failed, so a hung tool cannot hang the benchmark.
    public static func run(
        _ commands: [[String]], parallel: Int = 1, environment: [String: String] = [:],
        output: String? = nil, timeout: Duration = .seconds(3600)
    ) -> RunMeasurement {
        let start = ContinuousClock.now
        var running: Set<pid_t> = []
        var peak = 0
        var cpu = 0.0
        var succeeded = true
        var next = 0
        let env = ProcessInfo.processInfo.environment.merging(environment) { $1 }.map { "\($0)=\($1)" }
        let outputPath = output ?? "/dev/null"

        let deadline = start + timeout
        func reapOne() {
            var status: Int32 = 0
            var usage = rusage()
            while true {
                // Only this run's own children, by pid: wait4(-1) would also reap processes that
                // other code in the same process started (Foundation's Process in a test running
                // beside this one), which would then wait for an exit status that never comes.
                for child in running {
                    let pid = wait4(child, &status, WNOHANG, &usage)
                    if pid == child {
                        running.remove(child)
                        peak = max(peak, Int(usage.ru_maxrss) * 1024)
                        cpu += cpuSeconds(usage.ru_utime) + cpuSeconds(usage.ru_stime)
                        // Exited normally with status 0: no terminating signal and a zero exit code.
                        if status != 0 { succeeded = false }
                        return
                    }
                    if pid < 0 && errno != EINTR {
                        running.remove(child)
                        succeeded = false
                        return
                    }
                }
                if running.isEmpty { return }
                if ContinuousClock.now > deadline {
                    // Each command leads its own process group: the kill reaches its children too.
                    for pid in running { kill(-pid, SIGKILL) }
                    succeeded = false
                }
                usleep(5_000)
            }
        }

        while next < commands.count || !running.isEmpty {
            while next < commands.count && running.count < max(1, parallel) {
                if let pid = spawn(commands[next], environment: env, output: outputPath) {
                    running.insert(pid)
                } else {
                    succeeded = false
                }
                next += 1
            }
            if !running.isEmpty { reapOne() }
        }
        let elapsed = ContinuousClock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return RunMeasurement(seconds: seconds, peakResidentBytes: peak, succeeded: succeeded, cpuSeconds: cpu)
    }

    /// A rusage time field in seconds.
    private static func cpuSeconds(_ time: timeval) -> Double {
        Double(time.tv_sec) + Double(time.tv_usec) / 1e6
    }

    /// Whether `name` is an executable on PATH (or an executable path).
    public static func which(_ name: String) -> String? {
        if name.contains("/") { return access(name, X_OK) == 0 ? name : nil }
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let candidate = "\(directory)/\(name)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }

    /// Runs a command and returns its standard output, or nil when it fails.
    public static func capture(_ command: [String]) -> String? {
        let process = Process()
        guard let executable = which(command[0]) else { return nil }
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = Array(command.dropFirst())
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        guard (try? process.run()) != nil else { return nil }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return process.terminationStatus == 0 ? String(decoding: data, as: UTF8.self) : nil
    }

    private static func spawn(_ command: [String], environment: [String], output: String) -> pid_t? {
        guard let executable = which(command[0]) else { return nil }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)

        let argv = ([executable] + command.dropFirst()).map { strdup($0) } + [nil]
        let envp = environment.map { strdup($0) } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // A process group of its own (so a timeout can kill its children) and no signals blocked.
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK))

        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        return result == 0 ? pid : nil
    }
}
