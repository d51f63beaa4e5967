// The worker's image helpers: one per compression at once, each doing one job at a time, replaced when one dies.
import CSandbox
import CoreMetrics
import Foundation
import ImagePipe
import Logging
import Synchronization

/// A pool of image helper processes.
///
/// The pipeline compresses at most `--jobs` images at once, so the pool holds that many helpers and a
/// compression thread never waits for one. A helper that dies or is killed is reaped at once and a
/// new one started the next time one is needed, so a crash costs its job and nothing else.
final class HelperPool: Sendable {
    let settings: HelperSettings
    let size: Int
    private let environment: [String]
    private let logger: Logger
    private let idle = Mutex<[HelperProcess]>([])
    private let slots: DispatchSemaphore
    /// Registers, once, the reaping of every helper when the process exits.
    private static let reapAtExit: Void = {
        atexit { HelperProcess.reapAll() }
    }()

    /// How long a helper may take to start: the first start loads every codec once.
    static let startTimeout: Duration = .seconds(60)

    init(settings: HelperSettings, size: Int, environment: [String], logger: Logger) {
        self.settings = settings
        self.size = max(1, size)
        self.environment = environment
        self.logger = logger
        self.slots = DispatchSemaphore(value: max(1, size))
    }

    /// Starts every helper and waits until each is ready. A helper that cannot apply its sandbox
    /// stops the worker here, naming the cause; one that found no Landlock in the kernel is
    /// started with seccomp alone, and said so once.
    func start() throws(ImagePipeError) {
        _ = Self.reapAtExit
        var started: [HelperProcess] = []
        var failure: ImagePipeError?
        for _ in 0..<size {
            do throws(ImagePipeError) {
                started.append(try launch())
            } catch {
                failure = error
                break
            }
        }
        var landlockMissing = false
        var ready: [HelperProcess] = []
        for helper in started {
            do throws(ImagePipeError) {
                if try awaitReady(helper) == 0, settings.sandbox { landlockMissing = true }
                ready.append(helper)
            } catch {
                if failure == nil { failure = error }
            }
        }
        if let failure {
            for helper in ready { helper.killAndReap() }
            throw failure
        }
        if landlockMissing {
            logger.warning(
                "this kernel has no Landlock: image helpers are sandboxed with seccomp alone (no file-system restriction)")
        }
        idle.withLock { $0.append(contentsOf: ready) }
    }

    /// A helper for one job: an idle one, or a new one where one died.
    func checkout() throws(ImagePipeError) -> HelperProcess {
        slots.wait()
        if let helper = idle.withLock({ $0.popLast() }) { return helper }
        do throws(ImagePipeError) {
            let helper = try launch()
            _ = try awaitReady(helper)
            return helper
        } catch {
            slots.signal()
            // At start-up this stops the worker; later it costs the job that needed the helper.
            throw ImagePipeError(.decoderCrashed, error.reason)
        }
    }

    /// Gives a helper back after its job; nil when it died or was killed (the pool starts another
    /// when one is next needed).
    func checkin(_ helper: HelperProcess?) {
        if let helper { idle.withLock { $0.append(helper) } }
        slots.signal()
    }

    /// Records a helper's end: reaped, counted by reason, logged.
    func retire(_ helper: HelperProcess, reason: RestartReason, source: String) {
        // Killed first whatever the reason: one that closed its channel may not have ended, and a
        // zombie keeps its status (and its pid) until it is reaped.
        let status = helper.killAndReap()
        Counter(label: "imagepipe_helper_restarts_total", dimensions: [("reason", reason.rawValue)]).increment()
        logger.warning(
            "image helper ended; a new one takes its place",
            metadata: [
                "reason": "\(reason.rawValue)", "helper_pid": "\(helper.pid)", "status": "\(HelperProcess.describe(status))",
                "source": "\(source)",
            ])
    }

    /// Why a helper was replaced: the `reason` label of `imagepipe_helper_restarts_total`.
    enum RestartReason: String {
        /// It died by itself: a signal, or an exit it did not choose.
        case crashed
        /// It ran past `--job-timeout` and was killed.
        case timeout
        /// It sent what the protocol does not allow, and was killed.
        case misbehaved
    }

    /// Asks every idle helper to give back the memory busy moments kept; sent, not waited for.
    func trimIdle() {
        let message = HelperRequest.trim.encoded()
        idle.withLock { helpers in
            for helper in helpers { try? helper.channel.send(message) }
        }
    }

    private func launch() throws(ImagePipeError) -> HelperProcess {
        let pair: (worker: HelperChannel, helper: Int32)
        do { pair = try HelperChannel.pair() } catch { throw Self.startError("no channel: \(error)") }
        defer { close(pair.helper) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let json = (try? encoder.encode(settings)).flatMap { String(data: $0, encoding: .utf8) } ?? "{}"
        let arguments = [HelperSettings.subcommand, "--settings", json]
        switch HelperSpawner.shared.spawn(arguments: arguments, environment: environment, channel: pair.helper) {
        case .success(let pid): return HelperProcess(pid: pid, channel: pair.worker)
        case .failure(let error): throw Self.startError(String(cString: strerror(error.number)))
        }
    }

    /// Waits for a new helper's first message; returns the Landlock ABI it restricted itself with.
    private func awaitReady(_ helper: HelperProcess) throws(ImagePipeError) -> Int {
        let message: ChannelMessage
        do {
            message = try helper.channel.receive(timeout: Self.startTimeout)
        } catch {
            let status = helper.killAndReap()
            throw Self.startError(error == .timedOut ? "not ready after \(Self.startTimeout)" : "it ended (\(HelperProcess.describe(status)))")
        }
        message.closeDescriptors()
        switch try? HelperReply(decoding: message.bytes) {
        case .ready(_, let landlock):
            return landlock
        case .startFailed(let reason):
            helper.reap()
            throw .configuration("the image helper cannot start: \(reason)\(settings.sandbox ? " (--sandbox off runs image work without it)" : "")")
        default:
            helper.killAndReap()
            throw Self.startError("its first message was not a ready one")
        }
    }

    private static func startError(_ reason: String) -> ImagePipeError {
        .configuration("cannot start an image helper: \(reason)")
    }
}
