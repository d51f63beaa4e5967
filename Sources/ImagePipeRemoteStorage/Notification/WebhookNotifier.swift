// The notifier: a bounded queue of recorded jobs' notices and a few Dispatch lanes of its own that POST them, so jobs never wait on the receiver.
import Dispatch
import Foundation
public import ImagePipe
public import Logging
import Synchronization

/// POSTs one signed notification per recorded job to `--notify-url`, retrying until a deadline.
///
/// Jobs hand their notices over ``send(_:)`` (async code) or ``sendWaiting(_:)`` (a Dispatch
/// thread) and go on: delivery runs on the notifier's own lanes, serial Dispatch queues as the
/// pipeline's transfer queue has (see ``BoundedQueue``), never on the cooperative pool nor the
/// pipeline's queues, as libcurl blocks. A lane stays with its notice through the backoff between
/// attempts, which is scheduled work on it (`asyncAfter`), not a sleeping thread. The queue of
/// notices waiting for a lane is bounded (``Configuration/capacity``):
/// when the receiver is so slow that it fills up, the next job to finish waits for room, so memory
/// stays bounded and the jobs slow down to what the receiver takes rather than outrunning it.
/// A notice that cannot be delivered by its deadline is logged and counted, and dropped: its job's
/// result is already recorded, and the job never runs again for it.
public final class WebhookNotifier: JobNotifier, Sendable {
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
        /// Notifications sent at once (lanes of the notifier).
        public var senders: Int
        /// The backoff before the second attempt; it doubles each time, up to ``maxDelay``, with jitter.
        public var firstDelay: Duration
        /// The longest backoff.
        public var maxDelay: Duration
        /// Who records each POST of a traced job's notice as a client span of its job span; nil
        /// records none (the POST still carries the job's `traceparent`).
        public var tracer: Tracer?

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
    /// One serial queue per notification sent at once.
    let lanes: [DispatchQueue]
    let state: Mutex<State>

    struct State: ~Copyable {
        /// Notices waiting for a lane, oldest first (from `head`).
        var pending: [Pending] = []
        var head = 0
        /// Producers waiting for room, each with its notice and how to let it go on.
        var waiters: [(notice: Pending, resume: @Sendable () -> Void)] = []
        /// Lanes with no notice.
        var free: [Int]
        /// Notices on a lane, not yet delivered or given up, by id.
        var sending: [String: Int] = [:]
        /// Notices whose producer was cancelled while it waited for room: never queued, still undelivered.
        var withdrawn: [String] = []
        /// Callers of ``finish(within:)`` waiting for every notice to be settled, by a number of their own.
        var idleWaiters: [Int: @Sendable () -> Void] = [:]
        var nextWaiter = 0
        var hurriedUntil: ContinuousClock.Instant?
        var stopped = false

        init(lanes: Int) { free = Array((0..<lanes).reversed()) }

        var waitingCount: Int { pending.count - head }
        var isIdle: Bool { waitingCount == 0 && waiters.isEmpty && sending.isEmpty }

        mutating func popPending() -> Pending? {
            guard head < pending.count else { return nil }
            let first = pending[head]
            head += 1
            if head == pending.count {
                pending.removeAll(keepingCapacity: true)
                head = 0
            } else if head > 64 && head * 2 > pending.count {
                pending.removeFirst(head)
                head = 0
            }
            return first
        }
    }

    /// Checks the URL and makes the lanes.
    ///
    /// - Throws: `configuration` when the URL is not http(s) or the secret is empty.
    public init(configuration: Configuration, logger: Logger) throws(ImagePipeError) {
        try Self.check(url: configuration.url, secret: configuration.secret)
        self.configuration = configuration
        self.signature = NotificationSignature(secret: configuration.secret)
        self.logger = logger
        let seconds = configuration.attemptTimeout
        let senders = max(1, configuration.senders)
        client = CurlHTTPClient(
            configuration: .init(
                connectTimeout: seconds, stallTimeout: seconds, maxIdleHandles: senders,
                maxResponseBytes: 64 << 10, totalTimeout: seconds))
        lanes = (0..<senders).map { DispatchQueue(label: "imagepipe.notify.\($0)", qos: .utility) }
        state = Mutex(State(lanes: senders))
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

    /// A notice waiting for a lane, with when its deadline starts and whom to tell once it is settled.
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
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                offer(entry, cancelled: Task.isCancelled) { continuation.resume() }
            }
        } onCancel: {
            withdraw(notice.id)
        }
    }

    public func trySend(_ notice: JobNotice, settled: (@Sendable (String) -> Void)?) -> Bool {
        let lane = state.withLock { state -> Int?? in
            guard !state.stopped, state.waitingCount < configuration.capacity else { return .none }
            return .some(enqueue(Pending(notice: notice, since: .now, settled: settled), in: &state))
        }
        guard let lane else { return false }
        if let lane { start(on: lane) }
        return true
    }

    public var room: Int {
        state.withLock { state in state.stopped ? 0 : max(0, configuration.capacity - state.waitingCount - state.waiters.count) }
    }

    /// Hands a notice over from a thread that may block (a batch's result queue), waiting while the queue is full.
    public func sendWaiting(_ notice: JobNotice) {
        let room = DispatchSemaphore(value: 0)
        offer(Pending(notice: notice, since: .now, settled: nil), cancelled: false) { room.signal() }
        room.wait()
    }

    /// Lets a parked producer go without its notice taking a place.
    private func withdraw(_ id: String) {
        let waiter = state.withLock { state -> (@Sendable () -> Void)? in
            guard let index = state.waiters.firstIndex(where: { $0.notice.notice.id == id }) else { return nil }
            state.withdrawn.append(id)
            return state.waiters.remove(at: index).resume
        }
        waiter?()
        notifyIfIdle()
    }

    /// Queues the notice and lets its producer go on at once when there is room; else parks it with
    /// its producer, whom the lane that makes room lets go. Under the lock throughout, so no room can
    /// be freed between the check and the parking.
    private func offer(_ entry: Pending, cancelled: Bool, resume: @escaping @Sendable () -> Void) {
        enum Next { case go(Int?), parked }
        let next = state.withLock { state -> Next in
            if state.waitingCount < configuration.capacity || state.stopped { return .go(enqueue(entry, in: &state)) }
            if cancelled {
                // Cancelled before it could park: the handler found nothing to withdraw.
                state.withdrawn.append(entry.notice.id)
                return .go(nil)
            }
            state.waiters.append((entry, resume))
            return .parked
        }
        guard case .go(let lane) = next else { return }
        resume()
        if let lane { start(on: lane) }
    }

    /// Puts a notice on a free lane (returned, to be started once the lock is let go) or at the end
    /// of the queue; drops it, logged, once the notifier has stopped.
    private func enqueue(_ entry: Pending, in state: inout State) -> Int? {
        if state.stopped {
            logger.error(
                "notification not sent: the notifier has stopped",
                metadata: ["job": "\(entry.notice.job)", "url": "\(Self.redacted(configuration.url))"])
            NotificationMetrics.finished(delivered: false)
            return nil
        }
        state.pending.append(entry)
        return state.free.popLast()
    }

    /// Starts the oldest waiting notice on `lane`, or gives the lane back when none waits.
    func start(on lane: Int) {
        let (next, resume) = state.withLock { state -> (Pending?, (@Sendable () -> Void)?) in
            guard !state.stopped, let first = state.popPending() else {
                state.free.append(lane)
                return (nil, nil)
            }
            state.sending[first.notice.id, default: 0] += 1
            // Room has been made: the longest-waiting producer's notice takes it.
            guard !state.waiters.isEmpty else { return (first, nil) }
            let waiter = state.waiters.removeFirst()
            state.pending.append(waiter.notice)
            return (first, waiter.resume)
        }
        resume?()
        guard let next else { return }
        lanes[lane].async { self.deliver(next, attempt: 1, on: lane) }
    }

    /// A notice on `lane` is delivered or given up (`settled`), or cut short by the stop (whoever
    /// keeps it sends it again); the lane takes the next one.
    func finished(_ taken: Pending, settled: Bool, on lane: Int) {
        // Told before the notice stops counting as sent, so a finish that returns has every
        // settled notice forgotten by whoever keeps them.
        if settled { taken.settled?(taken.notice.id) }
        state.withLock { state in
            state.sending[taken.notice.id, default: 1] -= 1
            if state.sending[taken.notice.id] == 0 { state.sending[taken.notice.id] = nil }
        }
        start(on: lane)
        notifyIfIdle()
    }

    /// Lets the callers of ``finish(within:)`` go on once every notice is settled.
    private func notifyIfIdle() {
        let waiting = state.withLock { state -> [@Sendable () -> Void] in
            guard state.isIdle, !state.idleWaiters.isEmpty else { return [] }
            defer { state.idleWaiters.removeAll() }
            return Array(state.idleWaiters.values)
        }
        for resume in waiting { resume() }
    }

    public func finish(within limit: Duration) async -> [String] {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            whenIdle(within: limit) { continuation.resume() }
        }
        return stop()
    }

    /// ``finish(within:)`` for a thread that may block (a batch's end). Blocks.
    @discardableResult
    public func finishWaiting(within limit: Duration) -> [String] {
        let idle = DispatchSemaphore(value: 0)
        whenIdle(within: limit) { idle.signal() }
        idle.wait()
        return stop()
    }

    /// Calls `resume` once: when every notice handed over is delivered or given up, or after `limit`.
    private func whenIdle(within limit: Duration, _ resume: @escaping @Sendable () -> Void) {
        let number = state.withLock { state -> Int? in
            guard !state.isIdle else { return nil }
            defer { state.nextWaiter += 1 }
            state.idleWaiters[state.nextWaiter] = resume
            return state.nextWaiter
        }
        guard let number else { return resume() }
        DispatchQueue.global().asyncAfter(deadline: .now() + max(0, limit.timeInterval)) {
            let waiter = self.state.withLock { $0.idleWaiters.removeValue(forKey: number) }
            waiter?()
        }
    }

    /// Stops the lanes taking notices; returns the ids of those still undelivered (logged and counted).
    private func stop() -> [String] {
        let (left, resumes) = state.withLock { state in
            var left = state.pending[state.head...].map(\.notice.id) + state.waiters.map(\.notice.notice.id)
            left += state.sending.keys.sorted() + state.withdrawn
            state.stopped = true
            let resumes = state.waiters.map(\.resume)
            state.pending.removeAll()
            state.head = 0
            state.waiters.removeAll()
            return (left, resumes)
        }
        for resume in resumes { resume() }
        if !left.isEmpty {
            logger.error(
                "stopping with notifications undelivered; their jobs' results are recorded",
                metadata: ["notifications": .stringConvertible(left.count), "url": "\(Self.redacted(configuration.url))"])
            for _ in left { NotificationMetrics.finished(delivered: false) }
        }
        return left
    }

    /// Whether the notifier was stopped; a lane backing off checks it.
    var isStopped: Bool { state.withLock { $0.stopped } }

    /// When every notice's retries end, if sooner than its own deadline (see ``hurry(within:)``).
    var cutoff: ContinuousClock.Instant? { state.withLock { $0.hurriedUntil } }

    /// Ends every notice's retries within `limit` from now, sooner than their deadlines: a batch
    /// interrupted (Ctrl-C) finishes its images in flight without each notice to a receiver that is
    /// down holding it up for the whole deadline. Running the batch again sends them again.
    public func hurry(within limit: Duration) {
        let until = ContinuousClock.now + limit
        state.withLock { $0.hurriedUntil = min($0.hurriedUntil ?? until, until) }
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
