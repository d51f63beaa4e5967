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
/// new one started the next time one is needed, so a crash costs its job and nothing else. A helper
/// is also replaced after a job that failed, and after ``jobsPerHelper`` jobs: a helper that a
/// hostile image took over without failing its job keeps it for a bounded number of others.
final class HelperPool: Sendable {
    let settings: HelperSettings
    let size: Int
    /// The watermark logo's bytes, handed to each helper as it starts (read once by the worker, so
    /// every helper has the logo whose hash the variants record, whatever became of the file since).
    let logo: Data?
    private let environment: [String]
    let logger: Logger
    private let idle = Mutex<[HelperProcess]>([])
    /// The process that forks every helper (see ``Zygote``); nil when helpers are started from the executable.
    let zygote = Mutex<HelperProcess?>(nil)
    private let slots: DispatchSemaphore

    /// How long a helper may take to start.
    static let startTimeout: Duration = .seconds(60)
    /// Jobs a helper serves before it is replaced. A new helper, forked by the zygote, costs about
    /// 6 ms of CPU (35 ms started from the file): 0.06 % of a 1 ms job spread over 10,000, so the
    /// bound on what one job can see of later ones costs next to nothing.
    static let jobsPerHelper = 10_000

    init(settings: HelperSettings, size: Int, logo: Data?, environment: [String], logger: Logger) {
        self.settings = settings
        self.size = max(1, size)
        self.logo = logo
        self.environment = environment
        self.logger = logger
        self.slots = DispatchSemaphore(value: max(1, size))
    }

    /// Registers, once, the reaping of every helper when the process exits.
    private static let reapAtExit: Void = {
        atexit { HelperProcess.reapAll() }
    }()

    /// Starts every helper and waits until each is ready. A helper that cannot apply its sandbox
    /// stops the worker here, naming the cause; one that found no Landlock in the kernel is
    /// started with seccomp alone, and said so once.
    func start() throws(ImagePipeError) {
        _ = Self.reapAtExit
        let zygote = startZygote()
        self.zygote.withLock { $0 = zygote }
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
            logger.warning("this kernel has no Landlock: image helpers are sandboxed with seccomp alone (no file-system restriction)")
        }
        idle.withLock { $0.append(contentsOf: ready) }
    }

    /// A helper for one job: an idle one that is still alive and silent, or a new one.
    func checkout() throws(ImagePipeError) -> HelperProcess {
        slots.wait()
        while let helper = idle.withLock({ $0.popLast() }) {
            // One that died (its end of the channel closed with it) or spoke while idle is replaced
            // here, not blamed on this job: one poll, no wait call, as this runs for every job.
            guard helper.channel.peerClosedOrSpoke else { return helper }
            retire(helper, reason: .crashed, source: nil)
        }
        do throws(ImagePipeError) {
            let helper = try launch()
            _ = try awaitReady(helper)
            return helper
        } catch {
            slots.signal()
            // At start-up this stops the worker; later it costs an attempt of the job that needed
            // the helper, and is not the image's doing: no crash is counted against it.
            throw ImagePipeError(.helperUnavailable, error.reason)
        }
    }

    /// Gives a helper back after a job it answered: kept for the next, unless the job failed (what
    /// made it fail may have left the helper in any state) or the helper served its share.
    func checkin(_ helper: HelperProcess, jobFailed: Bool, jobs: Int = 1) {
        helper.jobs += jobs
        if jobFailed || helper.jobs >= Self.jobsPerHelper {
            retire(helper, reason: .recycled, source: nil)
        } else {
            idle.withLock { $0.append(helper) }
        }
        slots.signal()
    }

    /// Gives the slot of a helper that ended (and was retired) back.
    func checkinEnded() { slots.signal() }

    /// Ends a helper: killed if it runs, reaped, counted by reason, logged unless recycled.
    func retire(_ helper: HelperProcess, reason: RestartReason, source: String?) {
        let status = helper.killAndReap()
        Counter(label: "imagepipe_helper_restarts_total", dimensions: [("reason", reason.rawValue)]).increment()
        guard reason != .recycled else { return }
        renewZygote()
        var metadata: Logger.Metadata = [
            "reason": "\(reason.rawValue)", "helper_pid": "\(helper.pid)", "status": "\(HelperProcess.describe(status))",
        ]
        if let source { metadata["source"] = "\(source)" }
        logger.warning(
            source == nil ? "image helper ended while idle; a new one takes its place" : "image helper ended; a new one takes its place",
            metadata: metadata)
    }

    /// Why a helper was replaced: the `reason` label of `imagepipe_helper_restarts_total`.
    enum RestartReason: String {
        /// It died by itself: a signal, or an exit it did not choose.
        case crashed
        /// It ran past `--job-timeout` and was killed.
        case timeout
        /// It sent what the protocol does not allow, and was killed.
        case misbehaved
        /// It failed a job, or served its share of jobs: replaced before the next.
        case recycled
    }

    /// Asks every idle helper to give back the memory busy moments kept; sent without waiting (a
    /// helper that does not read is found out at its next checkout), outside the pool's lock.
    func trimIdle() {
        let message = HelperRequest.trim.encoded()
        let helpers = idle.withLock { $0 }
        for helper in helpers { try? helper.channel.send(message, timeout: .zero) }
    }

    /// A new helper, forked by the zygote or, without one, started from the executable, and handed
    /// its start message.
    private func launch() throws(ImagePipeError) -> HelperProcess {
        let helper = try spawn(extraArguments: [])
        // Its first message, waiting in the socket until its sandbox is in place: the logo.
        try sendStart(helper)
        return helper
    }

    /// A new process of the helper command with its channel and output pipe: forked by the zygote
    /// when there is one and `extraArguments` is empty, else started from the executable.
    func spawn(extraArguments: [String]) throws(ImagePipeError) -> HelperProcess {
        if extraArguments.isEmpty, zygote.withLock({ $0 != nil }) {
            let (channel, helperEnd, output) = try Self.channelAndOutput()
            defer { close(helperEnd) }
            defer { close(output.write) }
            if let pid = forkFromZygote(channel: helperEnd, output: output.write) {
                HelperOutput.follow(output.read, pid: pid, logger: logger)
                return HelperProcess(pid: pid, channel: channel)
            }
            // A zygote that failed may have forked a helper holding these ends after all: a helper
            // started from the file gets ends of its own.
            close(output.read)
        }
        let (channel, helperEnd, output) = try Self.channelAndOutput()
        defer { close(helperEnd) }
        defer { close(output.write) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let json = (try? encoder.encode(settings)).flatMap { String(data: $0, encoding: .utf8) } ?? "{}"
        let arguments = [HelperSettings.subcommand] + extraArguments + ["--settings", json]
        switch HelperSpawner.shared.spawn(arguments: arguments, environment: environment, channel: helperEnd, output: output.write) {
        case .success(let pid):
            HelperOutput.follow(output.read, pid: pid, logger: logger)
            return HelperProcess(pid: pid, channel: channel)
        case .failure(let error):
            close(output.read)
            throw Self.startError(String(cString: strerror(error.number)))
        }
    }

    /// A new helper's channel (the worker's end and the helper's) and output pipe.
    private static func channelAndOutput() throws(ImagePipeError) -> (HelperChannel, Int32, (read: Int32, write: Int32)) {
        let pair: (worker: HelperChannel, helper: Int32)
        do { pair = try HelperChannel.pair() } catch { throw startError("no channel: \(error)") }
        var output: [Int32] = [-1, -1]
        guard ips_pipe(&output) == 0 else {
            let reason = String(cString: strerror(errno))
            close(pair.helper)
            throw startError("no pipe for its output: \(reason)")
        }
        return (pair.worker, pair.helper, (output[0], output[1]))
    }

    private func sendStart(_ helper: HelperProcess) throws(ImagePipeError) {
        var descriptors: [Int32] = []
        if let logo {
            let file = ips_memory_file("imagepipe-logo")
            guard file >= 0, logo.withUnsafeBytes({ ips_write_all(file, $0.baseAddress, $0.count, 0) }) == 0 else {
                if file >= 0 { close(file) }
                helper.killAndReap()
                throw Self.startError("cannot hand it the watermark logo: \(String(cString: strerror(errno)))")
            }
            descriptors = [file]
        }
        defer { for file in descriptors { close(file) } }
        do {
            try helper.channel.send(HelperRequest.start(hasLogo: logo != nil).encoded(), descriptors: descriptors, timeout: Self.startTimeout)
        } catch {
            // A forked helper that cannot apply its sandbox says why and ends within a millisecond,
            // often before this message: its reason waits in the channel, and is the error to give.
            _ = try awaitReady(helper)
            let status = helper.killAndReap()
            throw Self.startError("it ended (\(HelperProcess.describe(status)))")
        }
    }

    /// Waits for a new helper's first message; returns the Landlock ABI it restricted itself with.
    func awaitReady(_ helper: HelperProcess) throws(ImagePipeError) -> Int {
        let message: ChannelMessage
        do {
            message = try helper.channel.receive(timeout: Self.startTimeout)
        } catch {
            let status = helper.killAndReap()
            throw Self.startError(error == .timedOut ? "not ready after \(Self.startTimeout)" : "it ended (\(HelperProcess.describe(status)))")
        }
        message.closeDescriptors()
        switch try? HelperReply(decoding: message.bytes) {
        case .ready(_, let landlock) where message.descriptors.isEmpty:
            return landlock
        case .startFailed(let reason):
            helper.killAndReap()
            throw .configuration("the image helper cannot start: \(reason)\(settings.sandbox ? " (--sandbox off runs image work without it)" : "")")
        default:
            helper.killAndReap()
            throw Self.startError("its first message was not a ready one")
        }
    }

    static func startError(_ reason: String) -> ImagePipeError {
        .configuration("cannot start an image helper: \(reason)")
    }
}
