// What a finished job's notification says (event, job id, result record), and who takes it once the result is recorded.
public import Foundation

/// One finished job, as told to an application once its result is recorded.
///
/// The body of a notification is this, as JSON: `{"event": ..., "id": ..., "job": ..., "result": {...}}`,
/// the result being the very record the manifest or the queue keeps. Delivery is at least once: `id`
/// is the same on every attempt at one notification, so it is what a receiver deduplicates on (a
/// queue directory's job id is a file name, which a later delivery may use again).
public struct JobNotice: Sendable, Codable, Equatable {
    /// How the job ended.
    public enum Event: String, Sendable, Codable {
        /// Every variant was stored.
        case done
        /// It failed for good: in a batch, or in a queue a failure retrying cannot help, or its
        /// last attempt (in `failed/`, or a row in state `failed`). Attempts that will be retried
        /// are not told of.
        case failed
        /// It was left alone on purpose (up to date, not an image, ...).
        case skipped
        /// Someone cancelled it while it was queued or running (PostgreSQL queue).
        case cancelled

        /// Reads an event, `discarded` included: a queue's notices kept undelivered by a worker from
        /// before `failed` named a queue's failures too are sent as `failed`.
        public init(from decoder: any Decoder) throws {
            let name = try decoder.singleValueContainer().decode(String.self)
            guard let event = name == "discarded" ? .failed : Event(rawValue: name) else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "no event '\(name)'"))
            }
            self = event
        }

        /// The event of a result recorded as it stands (a batch, or a queue completing the job).
        public init(_ status: JobResult.Status) {
            switch status {
            case .done: self = .done
            case .failed: self = .failed
            case .skipped: self = .skipped
            }
        }
    }

    /// How the job ended.
    public var event: Event
    /// This notification's own id (a UUID), the same on every attempt at it.
    public var id: String
    /// The job's identity: the queue's job id (`watch`), or the run's id and the source (`batch`).
    public var job: String
    /// The result record, as recorded.
    public var result: JobResult
    /// The job span's W3C context when the job was traced: its notification POST carries it as
    /// `traceparent`, so the receiving application joins the trace. Kept with the notice (and in
    /// its body), so a notice sent by another worker, or after a restart, still carries it.
    public var traceparent: String?

    /// Creates a notice.
    public init(event: Event, job: String, result: JobResult, id: String = UUID().uuidString.lowercased()) {
        self.event = event
        self.id = id
        self.job = job
        self.result = result
        self.traceparent = result.trace?.traceparent.description
    }

    /// The notification's body: one JSON object, keys sorted, as the manifest writes its records.
    public func body() -> Data {
        Data(JSONLine.encode(self).utf8)
    }
}

/// Takes the notices of recorded jobs and tells someone, without holding up the jobs.
///
/// Called only after the result is recorded (manifest line written, queue settled), so a
/// notification never runs ahead of the record and a failed one never loses it.
public protocol JobNotifier: Sendable {
    /// Hands a notice over; suspends (never blocks a thread) while the notifier's queue is full.
    /// `settled` is called once the notice is delivered or given up for good (refused, or past its
    /// deadline), on any thread, and never for a notice still undelivered when the notifier stops:
    /// a queue keeps the notice until then, so one a worker dies with is sent by the next.
    func send(_ notice: JobNotice, settled: (@Sendable (String) -> Void)?) async
    /// Hands a notice over only if there is room now, never waiting: false when the notifier's
    /// queue is full or it has stopped (the caller keeps the notice for later).
    func trySend(_ notice: JobNotice, settled: (@Sendable (String) -> Void)?) -> Bool
    /// How many notices ``trySend(_:settled:)`` would take now.
    var room: Int { get }
    /// Waits until every notice handed over is delivered or given up, for at most `limit`, then
    /// stops; returns the ids of the notices still undelivered.
    func finish(within limit: Duration) async -> [String]
}

extension JobNotifier {
    /// Hands a notice over that nobody keeps (a batch's: running the batch again sends it again).
    public func send(_ notice: JobNotice) async { await send(notice, settled: nil) }
}
