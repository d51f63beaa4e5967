// The worker's image helpers: each serves one job, or one batch of small ones, and is never given another.
import CSandbox
import CoreMetrics
import Foundation
import ImagePipe
import Logging
import Synchronization

/// A pool of image helper processes, each used once.
///
/// A helper that decoded one upload never decodes an unrelated later one: a hostile image that took
/// a helper over, without failing its job, would otherwise see the sources of the jobs after it and
/// control their outputs. So each job (or each batch of small images) checks out a helper that has
/// never had one, and the helper is ended when the job is answered, whatever the outcome. To keep
/// that off the job's path, the pool keeps one fresh helper per compression at once, forked by the
/// zygote in the background as each is checked out; a compression thread waits for a helper only
/// when the background has not caught up. A helper that dies while fresh, or speaks before it had a
/// job, is replaced at its checkout and not blamed on the job.
final class HelperPool: Sendable {
    let settings: HelperSettings
    let size: Int
    /// The watermark logo's bytes, handed to each helper as it starts (read once by the worker, so
    /// every helper has the logo whose hash the variants record, whatever became of the file since).
    let logo: Data?
    private let environment: [String]
    let logger: Logger
    /// Helpers started, ready and never given a job.
    private let fresh = Mutex<[HelperProcess]>([])
    /// Fresh helpers being started in the background.
    private let starting = Mutex(0)
    /// The process that forks every helper (see ``Zygote``); nil when helpers are started from the executable.
    let zygote = Mutex<HelperProcess?>(nil)
    /// Counts the zygotes started: a fresh helper forked by a zygote that was since replaced (after a
    /// crash) is not used, as it has the old zygote's address layout.
    let generation = Atomic<Int>(0)
    private let slots: DispatchSemaphore
    /// Where fresh helpers are started, and used ones reaped: never on a compression thread.
    private let background = DispatchQueue(label: "imagepipe.helper-pool")

    /// How long a helper may take to start.
    static let startTimeout: Duration = .seconds(60)

    init(settings: HelperSettings, size: Int, logo: Data?, environment: [String], logger: Logger) {
        self.settings = settings
        self.size = max(1, size)
        self.logo = logo
        self.environment = environment
        self.logger = logger
        self.slots = DispatchSemaphore(value: max(1, size))
        // Every reason is exposed at zero from the start: a helper life is one job, so a healthy
        // worker may never replace one, and a series that only appears on the first failure makes
        // `rate()` and alerts on it blind to that first failure.
        for reason in RestartReason.allCases {
            Counter(label: "imagepipe_helper_restarts_total", dimensions: [("reason", reason.rawValue)]).increment(by: 0)
        }
    }

    /// Registers, once, the reaping of every helper when the process exits.
    private static let reapAtExit: Void = {
        atexit { HelperProcess.reapAll() }
    }()

    /// Starts a fresh helper for every compression at once and waits until each is ready. A helper
    /// that cannot apply its sandbox (or give up its privilege) stops the worker here, naming the
    /// cause; one that found no Landlock in the kernel is started with seccomp alone, and said so once.
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
        fresh.withLock { $0.append(contentsOf: ready) }
    }

    /// A helper that has never had a job, for one job (or one batch): a fresh one that is still
    /// alive and silent, or one started now.
    func checkout() throws(ImagePipeError) -> HelperProcess {
        slots.wait()
        let current = generation.load(ordering: .acquiring)
        while let helper = fresh.withLock({ $0.popLast() }) {
            // One that died (its end of the channel closed with it) or spoke before it had a job is
            // replaced here, not blamed on this job: one poll, no wait call, as this runs for every job.
            if helper.channel.peerClosedOrSpoke {
                retire(helper, reason: .crashed, source: nil)
                continue
            }
            if helper.generation != current {
                discard(helper)
                continue
            }
            replenish()
            return helper
        }
        do throws(ImagePipeError) {
            let helper = try launch()
            _ = try awaitReady(helper)
            replenish()
            return helper
        } catch {
            slots.signal()
            // At start-up this stops the worker; later it costs an attempt of the job that needed
            // the helper, and is not the image's doing: no crash is counted against it.
            throw ImagePipeError(.helperUnavailable, error.reason)
        }
    }

    /// Ends a helper whose job (or batch) was answered, whatever the outcome, and gives its place
    /// back: its life was that job. One that sent anything after its answer is counted and logged as
    /// misbehaving (its job's answer was already taken: the stray message never is).
    func checkin(_ helper: HelperProcess) {
        if helper.channel.hasMessageWaiting {
            Counter(label: "imagepipe_helper_restarts_total", dimensions: [("reason", RestartReason.misbehaved.rawValue)]).increment()
            logger.warning(
                "image helper sent a message after its job was answered; it is ended, and the message never read",
                metadata: ["reason": "misbehaved", "helper_pid": "\(helper.pid)"])
        }
        discard(helper)
        slots.signal()
    }

    /// Gives the place of a helper that ended (and was retired) back.
    func checkinEnded() { slots.signal() }

    /// Ends a helper that did nothing wrong, off the caller's thread: killed (its sandbox lets it
    /// do nothing that needs a goodbye) and reaped in the background.
    private func discard(_ helper: HelperProcess) {
        helper.sendKill()
        background.async { helper.killAndReap() }
    }

    /// Ends a helper that failed: killed if it runs, reaped, counted by reason and logged, and the
    /// zygote renewed (see ``renewZygote()``).
    func retire(_ helper: HelperProcess, reason: RestartReason, source: String?, detail: String? = nil) {
        let status = helper.killAndReap()
        Counter(label: "imagepipe_helper_restarts_total", dimensions: [("reason", reason.rawValue)]).increment()
        renewZygote()
        var metadata: Logger.Metadata = [
            "reason": "\(reason.rawValue)", "helper_pid": "\(helper.pid)", "status": "\(HelperProcess.describe(status))",
        ]
        if let source { metadata["source"] = "\(source)" }
        if let detail { metadata["detail"] = "\(detail)" }
        logger.warning(
            source == nil ? "image helper ended before it had a job; a new one takes its place" : "image helper ended; a new one takes its place",
            metadata: metadata)
    }

    /// Why a helper was replaced: the `reason` label of `imagepipe_helper_restarts_total`.
    enum RestartReason: String, CaseIterable {
        /// It died by itself: a signal, or an exit it did not choose.
        case crashed
        /// It ran past `--job-timeout` (or its job past the wall-clock cap) and was killed.
        case timeout
        /// It sent what the protocol does not allow, and was killed.
        case misbehaved
    }

    /// Starts fresh helpers in the background until there is one for every compression at once.
    private func replenish() {
        let wanted = starting.withLock { starting -> Bool in
            guard fresh.withLock({ $0.count }) + starting < size else { return false }
            starting += 1
            return true
        }
        guard wanted else { return }
        background.async { [self] in
            defer { starting.withLock { $0 -= 1 } }
            do throws(ImagePipeError) {
                let helper = try launch()
                _ = try awaitReady(helper)
                fresh.withLock { $0.append(helper) }
            } catch {
                // The next checkout starts one itself, and says why if it cannot.
                logger.debug("a fresh image helper could not be started ahead", metadata: ["reason": "\(error.reason)"])
            }
        }
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
        let generation = generation.load(ordering: .acquiring)
        if extraArguments.isEmpty, zygote.withLock({ $0 != nil }) {
            let (channel, helperEnd, output) = try Self.channelAndOutput()
            defer { close(helperEnd) }
            defer { close(output.write) }
            if let pid = forkFromZygote(channel: helperEnd, output: output.write) {
                HelperOutput.follow(output.read, pid: pid, logger: logger)
                return HelperProcess(pid: pid, channel: channel, generation: generation)
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
            return HelperProcess(pid: pid, channel: channel, generation: generation)
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
