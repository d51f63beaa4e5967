// The notifier: a bounded queue of recorded jobs' notices and a few threads of its own that POST them, so jobs never wait on the receiver.
import Foundation
public import ImagePipe
public import Logging

/// POSTs one signed notification per recorded job to `--notify-url`, retrying until a deadline.
///
/// Jobs hand their notices over ``send(_:)`` (async code) or ``sendWaiting(_:)`` (a Dispatch
/// thread) and go on: delivery runs on the notifier's own threads, never on the cooperative pool
/// nor the pipeline's queues, as libcurl blocks. The queue is bounded (``Configuration/capacity``):
/// when the receiver is so slow that it fills up, the next job to finish waits for room, so memory
/// stays bounded and the jobs slow down to what the receiver takes rather than outrunning it.
/// A notice that cannot be delivered by its deadline is logged and counted, and dropped: its job's
/// result is already recorded, and the job never runs again for it.
public final class WebhookNotifier: JobNotifier, @unchecked Sendable {
    /// Where, how and how long.
    public struct Configuration: Sendable {
        /// The receiver's URL (http or https).
        public var url: String
        /// The shared secret the signature is made with.
        public var secret: String
        /// How long after a job finished its notification may still be tried.
        public var deadline: Duration
        /// How long one attempt may take in all, connecting and answering included.
        public var attemptTimeout: Duration
        /// Notices waiting at most; a job finishing beyond that waits for room.
        public var capacity: Int
        /// Notifications sent at once (threads of the notifier).
        public var senders: Int
        /// The backoff before the second attempt; it doubles each time, up to ``maxDelay``, with jitter.
        public var firstDelay: Duration
        /// The longest backoff.
        public var maxDelay: Duration

        /// Creates a configuration.
        public init(
            url: String, secret: String, deadline: Duration = .seconds(300), attemptTimeout: Duration = .seconds(10),
            capacity: Int = 256, senders: Int = 4, firstDelay: Duration = .milliseconds(500), maxDelay: Duration = .seconds(30)
        ) {
            self.url = url
            self.secret = secret
            self.deadline = deadline
            self.attemptTimeout = attemptTimeout
            self.capacity = capacity
            self.senders = senders
            self.firstDelay = firstDelay
            self.maxDelay = maxDelay
        }
    }

    /// The configuration.
    public let configuration: Configuration
    let client: CurlHTTPClient
    let signature: NotificationSignature
    let logger: Logger
    /// Guards everything below; senders and blocked producers wait on it.
    private let condition = NSCondition()
    private var pending: [Pending] = []
    /// Async producers waiting for room, each with its notice.
    private var waiters: [(notice: Pending, resume: CheckedContinuation<Void, Never>)] = []
    /// Notices taken by a sender and not yet delivered or given up, by id.
    private var sending: [String: Int] = [:]
    /// Notices whose producer was cancelled while it waited for room: never queued, still undelivered.
    private var withdrawn: [String] = []
    private var hurriedUntil: ContinuousClock.Instant?
    private var stopped = false

    /// Checks the URL and starts the senders.
    ///
    /// - Throws: `configuration` when the URL is not http(s) or the secret is empty.
    public init(configuration: Configuration, logger: Logger) throws(ImagePipeError) {
        try Self.check(url: configuration.url, secret: configuration.secret)
        self.configuration = configuration
        self.signature = NotificationSignature(secret: configuration.secret)
        self.logger = logger
        let seconds = configuration.attemptTimeout
        client = CurlHTTPClient(
            configuration: .init(
                connectTimeout: seconds, stallTimeout: seconds, maxIdleHandles: configuration.senders,
                maxResponseBytes: 64 << 10, totalTimeout: seconds))
        for index in 0..<max(1, configuration.senders) {
            let thread = Thread { [self] in runSender() }
            thread.name = "imagepipe.notify.\(index)"
            thread.start()
        }
    }

    /// Checks what a notifier needs before it starts, asking no server: an http(s) URL and a secret.
    ///
    /// - Throws: `configuration` naming what is wrong.
    public static func check(url text: String, secret: String) throws(ImagePipeError) {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme),
            url.host?.isEmpty == false
        else {
            throw .configuration("--notify-url '\(redacted(text))' is not an http:// or https:// URL")
        }
        guard !secret.isEmpty else {
            throw .configuration("--notify-url needs IMAGEPIPE_NOTIFY_SECRET: notifications are always signed")
        }
    }

    /// A notice waiting for a sender, with when its deadline starts and whom to tell once it is settled.
    struct Pending: Sendable {
        var notice: JobNotice
        var since: ContinuousClock.Instant
        var settled: (@Sendable (String) -> Void)?
    }

    /// A producer cancelled while it waits for room (a stop past its timeout) goes on at once, and
    /// its notice is reported undelivered by ``finish(within:)``: whoever keeps it sends it later.
    public func send(_ notice: JobNotice, settled: (@Sendable (String) -> Void)?) async {
        let entry = Pending(notice: notice, since: .now, settled: settled)
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in offer(entry, continuation) }
        } onCancel: {
            withdraw(notice.id)
        }
    }

    public func trySend(_ notice: JobNotice, settled: (@Sendable (String) -> Void)?) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !stopped, pending.count < configuration.capacity else { return false }
        enqueueLocked(Pending(notice: notice, since: .now, settled: settled))
        return true
    }

    public var room: Int {
        condition.lock()
        defer { condition.unlock() }
        return stopped ? 0 : max(0, configuration.capacity - pending.count - waiters.count)
    }

    /// Lets a parked producer go without its notice taking a place.
    private func withdraw(_ id: String) {
        condition.lock()
        let index = waiters.firstIndex { $0.notice.notice.id == id }
        let waiter = index.map { waiters.remove(at: $0) }
        if waiter != nil { withdrawn.append(id) }
        condition.broadcast()
        condition.unlock()
        waiter?.resume.resume()
    }

    /// Queues the notice and resumes at once when there is room; else parks it with its producer,
    /// whom the sender that makes room resumes. Under the lock throughout, so no room can be freed
    /// between the check and the parking.
    private func offer(_ entry: Pending, _ continuation: CheckedContinuation<Void, Never>) {
        condition.lock()
        defer { condition.unlock() }
        if pending.count < configuration.capacity || stopped {
            enqueueLocked(entry)
            continuation.resume()
        } else if Task.isCancelled {
            // Cancelled before it could park: the handler found nothing to withdraw.
            withdrawn.append(entry.notice.id)
            continuation.resume()
        } else {
            waiters.append((entry, continuation))
        }
    }

    /// Hands a notice over from a thread that may block (a batch's result queue), waiting while the queue is full.
    public func sendWaiting(_ notice: JobNotice) {
        condition.lock()
        while pending.count >= configuration.capacity && !stopped { condition.wait() }
        enqueueLocked(Pending(notice: notice, since: .now, settled: nil))
        condition.unlock()
    }

    private func enqueueLocked(_ entry: Pending) {
        if stopped {
            logger.error(
                "notification not sent: the notifier has stopped",
                metadata: ["job": "\(entry.notice.job)", "url": "\(Self.redacted(configuration.url))"])
            NotificationMetrics.finished(delivered: false)
            return
        }
        pending.append(entry)
        condition.broadcast()
    }

    public func finish(within limit: Duration) async -> [String] {
        await BlockingIO.run { self.finishWaiting(within: limit) }
    }

    /// Waits until every notice handed over is delivered or given up, for at most `limit`; then stops
    /// the senders. Returns the ids of the notices still undelivered (logged and counted). Blocks.
    @discardableResult
    public func finishWaiting(within limit: Duration) -> [String] {
        let end = Date().addingTimeInterval(limit.timeInterval)
        condition.lock()
        defer { condition.unlock() }
        while !(pending.isEmpty && waiters.isEmpty && sending.isEmpty) && condition.wait(until: end) {}
        let left = pending.map(\.notice.id) + waiters.map(\.notice.notice.id) + sending.keys.sorted() + withdrawn
        stopped = true
        let resumes = waiters.map(\.resume)
        pending.removeAll()
        waiters.removeAll()
        condition.broadcast()
        for resume in resumes { resume.resume() }
        if !left.isEmpty {
            logger.error(
                "stopping with notifications undelivered; their jobs' results are recorded",
                metadata: ["notifications": .stringConvertible(left.count), "url": "\(Self.redacted(configuration.url))"])
            for _ in left { NotificationMetrics.finished(delivered: false) }
        }
        return left
    }

    /// One sender: takes the oldest notice, delivers it (or gives up), and again, until stopped. A
    /// notice cut short by the stop is not settled: whoever keeps it sends it again.
    private func runSender() {
        while let taken = take() {
            // Told before the notice stops counting as sent, so a finish that returns has every
            // settled notice forgotten by whoever keeps them.
            if deliver(taken.notice, since: taken.since) { taken.settled?(taken.notice.id) }
            condition.lock()
            sending[taken.notice.id, default: 1] -= 1
            if sending[taken.notice.id] == 0 { sending[taken.notice.id] = nil }
            condition.broadcast()
            condition.unlock()
        }
    }

    private func take() -> Pending? {
        condition.lock()
        defer { condition.unlock() }
        while pending.isEmpty && !stopped { condition.wait() }
        guard !stopped else { return nil }
        let first = pending.removeFirst()
        sending[first.notice.id, default: 0] += 1
        // Room has been made: the longest-waiting async producer's notice takes it.
        if !waiters.isEmpty {
            let waiter = waiters.removeFirst()
            pending.append(waiter.notice)
            waiter.resume.resume()
        }
        condition.broadcast()
        return first
    }

    /// Whether the notifier was stopped; a sender backing off checks it.
    var isStopped: Bool {
        condition.lock()
        defer { condition.unlock() }
        return stopped
    }

    /// When every notice's retries end, if sooner than its own deadline (see ``hurry(within:)``).
    var cutoff: ContinuousClock.Instant? {
        condition.lock()
        defer { condition.unlock() }
        return hurriedUntil
    }

    /// Ends every notice's retries within `limit` from now, sooner than their deadlines: a batch
    /// interrupted (Ctrl-C) finishes its images in flight without each notice to a receiver that is
    /// down holding it up for the whole deadline. Running the batch again sends them again.
    public func hurry(within limit: Duration) {
        condition.lock()
        let until = ContinuousClock.now + limit
        hurriedUntil = min(hurriedUntil ?? until, until)
        condition.unlock()
    }

    /// `url` without what may be secret in it (user information, query): fit for logs.
    static func redacted(_ url: String) -> String {
        guard var parts = URLComponents(string: url) else { return "(unparsable URL)" }
        parts.user = nil
        parts.password = nil
        parts.query = nil
        parts.fragment = nil
        return parts.string ?? "(unparsable URL)"
    }
}
