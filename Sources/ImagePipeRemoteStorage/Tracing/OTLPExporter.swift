// Sends finished spans to an OTLP/HTTP receiver in batches, from a queue of its own: a job only ever appends to a list.
import Dispatch
import Foundation
public import ImagePipe
public import Logging
import Synchronization

/// The span sink of a traced process: a batch span processor and OTLP/HTTP exporter in one.
///
/// ``record(_:)`` appends under a lock and returns: a job never waits for the network. Spans
/// are POSTed from the exporter's own serial Dispatch queue (libcurl blocks, so not on Swift's
/// pool) every ``TracingConfiguration/scheduleDelay``, or as soon as a full batch waits. A
/// receiver that is down or slow costs only spans: beyond ``TracingConfiguration/maxQueueSize``
/// new spans are dropped and counted, and a failed request is not retried (the next batch is
/// already waiting). ``shutdown(within:)`` sends what is left within its time and gives up the rest.
public final class OTLPExporter: SpanSink {
    public let configuration: TracingConfiguration
    private let client: CurlHTTPClient
    private let logger: Logger
    private let queue = DispatchQueue(label: "imagepipe.traces", qos: .utility)
    private let resource: [Span.Attribute]
    private let scope: (name: String, version: String)

    private struct State {
        var waiting: [Span] = []
        /// A send is scheduled on the queue for a full batch.
        var sendScheduled = false
        var dropped = 0
        /// When each kind of warning was last logged.
        var lastWarning: [String: ContinuousClock.Instant] = [:]
        var stopped = false
        /// Once stopping: when sending ends, whichever round is sending.
        var deadline: ContinuousClock.Instant?
    }
    private let state = Mutex(State())

    /// What was sent, dropped and failed so far (the tests and the shutdown's log line read it).
    public struct Counts: Sendable, Equatable {
        public var sent = 0
        public var dropped = 0
        public var failedRequests = 0
    }
    private let counts = Mutex(Counts())

    public init(configuration: TracingConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        self.client = CurlHTTPClient(
            configuration: .init(
                connectTimeout: configuration.timeout, stallTimeout: configuration.timeout, maxIdleHandles: 1, maxResponseBytes: 64 << 10,
                totalTimeout: configuration.timeout))
        self.resource = configuration.resource.sorted { $0.key < $1.key }.map { Span.Attribute($0.key, .string($0.value)) }
        self.scope = ("imagepipe", configuration.resource["service.version"] ?? "")
        scheduleRound()
    }

    /// The next round of sending, one schedule delay from now, until the exporter stops.
    private func scheduleRound() {
        queue.asyncAfter(deadline: .now() + configuration.scheduleDelay.timeInterval) { [weak self] in
            guard let self, !self.state.withLock({ $0.stopped }) else { return }
            self.sendWaiting()
            self.scheduleRound()
        }
    }

    public func record(_ spans: [Span]) {
        let full = state.withLock { state -> Bool in
            guard !state.stopped else {
                state.dropped += spans.count
                return false
            }
            let room = max(0, configuration.maxQueueSize - state.waiting.count)
            state.waiting.append(contentsOf: spans.prefix(room))
            state.dropped += spans.count - min(room, spans.count)
            guard state.waiting.count >= configuration.maxBatchSize, !state.sendScheduled else { return false }
            state.sendScheduled = true
            return true
        }
        if full { queue.async { [self] in sendWaiting() } }
    }

    /// Sends what waits, a batch at a time (on the exporter's queue).
    private func sendWaiting() {
        while true {
            let (batch, dropped) = state.withLock { state -> ([Span], Int) in
                if let deadline = state.deadline, ContinuousClock.now >= deadline { return ([], 0) }
                let batch = Array(state.waiting.prefix(configuration.maxBatchSize))
                state.waiting.removeFirst(batch.count)
                if state.waiting.count < configuration.maxBatchSize { state.sendScheduled = false }
                defer { state.dropped = 0 }
                return (batch, state.dropped)
            }
            if dropped > 0 {
                counts.withLock { $0.dropped += dropped }
                warn("spans dropped: more finished than the OTLP receiver took in time", ["dropped": .stringConvertible(dropped)])
            }
            guard !batch.isEmpty else { return }
            send(batch)
        }
    }

    private func send(_ batch: [Span]) {
        let body = OTLPEncoding.request(batch, resource: resource, scope: scope)
        var headers: [(String, String)] = [("Content-Type", "application/x-protobuf")]
        headers += configuration.headers.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        let problem: String?
        do {
            let response = try client.perform(HTTPRequest(method: "POST", url: configuration.url, headers: headers, body: body))
            problem = response.isSuccess ? nil : "HTTP \(response.status)"
        } catch {
            problem = error.message
        }
        if let problem {
            counts.withLock { $0.failedRequests += 1 }
            warn(
                "spans not exported: the OTLP receiver did not take them; jobs go on untraced meanwhile",
                ["url": "\(configuration.url)", "error": "\(problem)", "spans": .stringConvertible(batch.count)])
        } else {
            counts.withLock { $0.sent += batch.count }
        }
    }

    /// One warning of each kind a minute at most: a receiver that is down would otherwise log each second.
    private func warn(_ message: Logger.Message, _ metadata: Logger.Metadata) {
        let now = ContinuousClock.now
        let due = state.withLock { state -> Bool in
            guard state.lastWarning[message.description].map({ now - $0 >= .seconds(60) }) ?? true else { return false }
            state.lastWarning[message.description] = now
            return true
        }
        if due { logger.warning(message, metadata: metadata) }
    }

    /// What was sent, dropped and failed so far.
    public var sentCounts: Counts { counts.withLock { $0 } }

    /// Stops taking spans and sends those waiting, for at most `limit`: blocking, so async code
    /// calls it through ``BlockingIO``. What is not sent by then is given up.
    public func shutdown(within limit: Duration) {
        let deadline = ContinuousClock.now + limit
        // A round under way (its requests each up to the timeout) stops sending at the deadline too.
        state.withLock {
            $0.stopped = true
            $0.deadline = deadline
        }
        let done = DispatchSemaphore(value: 0)
        queue.async { [self] in
            sendWaiting()
            done.signal()
        }
        let left = max(.zero, deadline - .now)
        let timedOut = done.wait(timeout: .now() + left.timeInterval) == .timedOut
        let unsent = state.withLock { $0.waiting.count + $0.dropped }
        if timedOut || unsent > 0 {
            logger.warning(
                "spans not exported: the OTLP receiver did not take them before the stop",
                metadata: ["url": "\(configuration.url)", "unsent": .stringConvertible(unsent)])
        }
        let counts = sentCounts
        logger.debug(
            "traces exported",
            metadata: [
                "spans": .stringConvertible(counts.sent), "dropped": .stringConvertible(counts.dropped),
                "failed_requests": .stringConvertible(counts.failedRequests),
            ])
    }
}
