// A queue as its operator sees it, the same for a queue directory and PostgreSQL: jobs by state, the oldest wait, jobs listed.

/// What `imagepipe queue status` and `queue list` show, whichever kind of queue it is.
///
/// One vocabulary for both kinds, the words of the queue directory's folders, of results, logs,
/// metrics and notifications: its `inbox/` holds the `waiting` jobs, `processing/` the `running`
/// ones, `done/` the `done` ones (skipped ones too: finished, nothing failed) and `failed/` the
/// `failed` ones; only PostgreSQL has `cancelled` jobs.
public struct QueueOverview: Sendable, Equatable, Encodable {
    /// A job's state.
    public enum State: String, Sendable, CaseIterable, Codable {
        case waiting, running, done, failed, cancelled

        /// The state `name` stands for: its own word, or `discarded`, the word for `failed` before
        /// one word named each fate everywhere, so scripts that pass it keep working.
        public init?(name: String) {
            if name == "discarded" {
                self = .failed
            } else {
                self.init(rawValue: name)
            }
        }
    }

    /// One job, as a line of `queue list`.
    public struct Job: Sendable, Equatable, Encodable {
        /// How commands name it: a PostgreSQL row's ID, or a path relative to its folder.
        public var id: String
        /// Its state.
        public var state: State
        /// The source as the producer gave it (a queue directory: its path relative to the inbox).
        public var source: String
        /// Seconds since it was delivered or enqueued (waiting), claimed (running) or finished.
        public var ageSeconds: Double?
        /// Attempts made so far, when known.
        public var attempts: Int?
        /// Its priority (PostgreSQL: lower runs first).
        public var priority: Int?
        /// Seconds until a waiting job is due (PostgreSQL: `run_at` in the future).
        public var dueInSeconds: Double?
        /// Who holds a running job: a worker's name, and whether it still lives when that is known.
        public var owner: String?
        /// The last error's code and reason (failed, cancelled, or a waiting retry).
        public var errorCode: String?
        public var error: String?
        /// A running job asked to stop (PostgreSQL `queue cancel`), not yet stopped.
        public var cancelRequested: Bool?

        /// A job with only its name, state and source.
        public init(id: String, state: State, source: String) {
            self.id = id
            self.state = state
            self.source = source
        }

        enum CodingKeys: String, CodingKey {
            case id, state, source, ageSeconds = "age_s", attempts, priority, dueInSeconds = "due_in_s", owner
            case errorCode = "error_code", error, cancelRequested = "cancel_requested"
        }
    }

    /// `directory` or `postgres`.
    public var kind: String
    /// The queue as logs name it (never with a password).
    public var queue: String
    /// Jobs per state; every state the kind has is present, zero included.
    public var counts: [State: Int]
    /// How long the oldest due job has waited to be claimed, in seconds; nil when none waits.
    public var oldestWaitingSeconds: Double?
    /// Jobs finished (done or failed) per second over the last minute.
    public var finishedPerSecond: Double
    /// The running jobs and the latest failed ones, for a look at what is going on.
    public var jobs: [Job]
    /// A queue directory's options files whose original is not in the inbox (no jobs: a producer
    /// that never delivered the original, or one delivering it now); nil for PostgreSQL.
    public var optionsWithoutOriginal: Int?

    /// Creates an overview.
    public init(kind: String, queue: String, counts: [State: Int], oldestWaitingSeconds: Double?, finishedPerSecond: Double, jobs: [Job]) {
        self.kind = kind
        self.queue = queue
        self.counts = counts
        self.oldestWaitingSeconds = oldestWaitingSeconds
        self.finishedPerSecond = finishedPerSecond
        self.jobs = jobs
    }

    enum CodingKeys: String, CodingKey {
        case kind, queue, counts, oldestWaitingSeconds = "oldest_waiting_s", finishedPerSecond = "jobs_per_s", jobs
        case optionsWithoutOriginal = "options_without_original"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(kind, forKey: .kind)
        try container.encode(queue, forKey: .queue)
        try container.encode(Dictionary(uniqueKeysWithValues: counts.map { ($0.key.rawValue, $0.value) }), forKey: .counts)
        try container.encode(oldestWaitingSeconds, forKey: .oldestWaitingSeconds)
        try container.encode(finishedPerSecond, forKey: .finishedPerSecond)
        try container.encode(jobs, forKey: .jobs)
        try container.encodeIfPresent(optionsWithoutOriginal, forKey: .optionsWithoutOriginal)
    }
}
