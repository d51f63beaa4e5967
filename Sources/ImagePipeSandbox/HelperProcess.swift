// One image helper: a child process of the worker, its channel, and how it ended.
import CSandbox
import Foundation
import ImagePipe
import Synchronization

/// A running helper, as its worker sees it.
final class HelperProcess: @unchecked Sendable {
    let pid: pid_t
    let channel: HelperChannel
    /// The variants and limits it was set up with: a session's later batches need no setup.
    var setup: (variants: [VariantSpec], limits: CompressionLimits)?
    /// The zygote it was forked from (``HelperPool/generation``), or the one current when it was
    /// started from the executable.
    let generation: Int
    /// How it ended, once reaped.
    private(set) var status: Int32?

    init(pid: pid_t, channel: HelperChannel, generation: Int = 0) {
        self.pid = pid
        self.channel = channel
        self.generation = generation
        _ = Self.live.withLock { $0.insert(pid) }
    }

    /// Sends it SIGKILL, unless it was reaped already (its pid may then be another process's).
    func sendKill() {
        Self.live.withLock { live in
            if live.contains(pid) { _ = Foundation.kill(pid, SIGKILL) }
        }
    }

    /// The helpers started and not yet reaped, for ``reapAll()``.
    private static let live = Mutex<Set<pid_t>>([])

    /// Kills and reaps every helper still running: called as the worker exits, so that their CPU
    /// time and memory are counted with the worker's (by `time`, `wait4`, a benchmark) instead of
    /// leaving them to die unreaped by PR_SET_PDEATHSIG.
    static func reapAll() {
        let pids = live.withLock { pids in
            defer { pids.removeAll() }
            return pids
        }
        for pid in pids { kill(pid, SIGKILL) }
        var status: Int32 = 0
        for pid in pids { _ = ips_wait(pid, &status, 0) }
    }

    /// Kills it (SIGKILL) and waits for it, keeping how it ended: a helper that died keeps its own
    /// status (a zombie ignores the signal), one that stopped answering or misbehaved ends here.
    @discardableResult
    func killAndReap() -> Int32 {
        if let status { return status }
        var raw: Int32 = 0
        // Taken out of the live set first: only one side (this, or the exit's reapAll) signals a
        // pid, and only while it is not yet reaped, so a reused pid is never hit.
        let ours = Self.live.withLock { $0.remove(pid) != nil }
        var got: pid_t = -1
        if ours {
            kill(pid, SIGKILL)
            got = ips_wait(pid, &raw, 0)
        }
        // A pid already reaped elsewhere cannot be told apart: counted as killed.
        let ended = got == pid ? raw : Int32(SIGKILL)
        status = ended
        return ended
    }

    /// Whether it has ended (without reaping it).
    var hasEnded: Bool { status != nil || ips_has_ended(pid) != 0 }

    /// How it ended, in words: "SIGSEGV (signal 11)", "exit status 3".
    static func describe(_ status: Int32) -> String {
        let signal = ips_status_signal(status)
        if signal > 0 { return "\(signalName(signal)) (signal \(signal))" }
        return "exit status \(ips_status_exit_code(status))"
    }

    static func signalName(_ signal: Int32) -> String {
        switch signal {
        case SIGSEGV: "SIGSEGV"
        case SIGBUS: "SIGBUS"
        case SIGABRT: "SIGABRT"
        case SIGILL: "SIGILL"
        case SIGFPE: "SIGFPE"
        case SIGKILL: "SIGKILL"
        case SIGTERM: "SIGTERM"
        case SIGTRAP: "SIGTRAP"
        case SIGSYS: "SIGSYS"
        case SIGXCPU: "SIGXCPU"
        default: "signal \(signal)"
        }
    }
}

/// Why a helper could not be started: the system's errno.
struct SpawnError: Error {
    let number: Int32
}

/// Starts the zygote, and helpers when there is none, from one thread that lives as long as the worker.
///
/// A helper asks to be killed when its parent dies (PR_SET_PDEATHSIG), and Linux takes the parent
/// to be the thread that started it: a helper started from a compression thread that Dispatch later
/// retired would be killed mid-job. This thread never ends. (A helper the zygote forks has the
/// zygote's parent, this thread, for its own: the zygote forks it with CLONE_PARENT.)
final class HelperSpawner: Sendable {
    static let shared = HelperSpawner()

    private struct Request: @unchecked Sendable {
        let arguments: [String]
        let environment: [String]
        let channel: Int32
        let output: Int32
        let done: DispatchSemaphore
        let result: UnsafeMutablePointer<(pid: pid_t, error: Int32)>
    }

    private let requests = Mutex<[Request]>([])
    private let wake = DispatchSemaphore(value: 0)

    private init() {
        // The spawner is the process's own for its whole life: the thread holds it.
        let thread = Thread { [self] in
            while true {
                wake.wait()
                guard let request = requests.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else { continue }
                request.result.pointee = Self.start(request.arguments, request.environment, request.channel, request.output)
                request.done.signal()
            }
        }
        thread.name = "imagepipe.helper-spawner"
        thread.start()
    }

    /// Starts `/proc/self/exe` (this very binary, even if a newer one was installed under its name
    /// since) with `arguments`, `channel` as its descriptor 3. The pid, or errno.
    func spawn(arguments: [String], environment: [String], channel: Int32, output: Int32) -> Result<pid_t, SpawnError> {
        let result = UnsafeMutablePointer<(pid: pid_t, error: Int32)>.allocate(capacity: 1)
        defer { result.deallocate() }
        result.initialize(to: (-1, 0))
        let done = DispatchSemaphore(value: 0)
        requests.withLock {
            $0.append(Request(arguments: arguments, environment: environment, channel: channel, output: output, done: done, result: result))
        }
        wake.signal()
        done.wait()
        return result.pointee.pid > 0 ? .success(result.pointee.pid) : .failure(SpawnError(number: result.pointee.error))
    }

    private static func start(_ arguments: [String], _ environment: [String], _ channel: Int32, _ output: Int32) -> (pid: pid_t, error: Int32) {
        let path = "/proc/self/exe"
        // Named as the command it is, so that `ps` shows "imagepipe image-helper".
        var argv: [UnsafeMutablePointer<CChar>?] = (["imagepipe"] + arguments).map { strdup($0) } + [nil]
        var envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup($0) } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        let pid = ips_spawn(path, &argv, &envp, channel, output)
        return pid > 0 ? (pid, 0) : (-1, errno)
    }
}
