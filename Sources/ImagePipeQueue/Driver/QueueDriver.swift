// A kind of queue behind one protocol: how it is named, the worker's queue it opens, and what the admin commands do with it.
public import Foundation
public import ImagePipe
public import Logging
public import ServiceLifecycle

/// One kind of queue: a queue directory, a PostgreSQL table. Everything a command does with a
/// queue goes through its driver, so no command asks which kind it has, and adding a queue is
/// writing a driver (and its ``JobQueue``) that passes the queue contract suite, and adding it to
/// the one list the command line reads (`QueueDrivers`).
///
/// An operation a queue does not have says so by throwing ``unsupported(_:_:)`` (exit status 2),
/// with what to do instead; the defaults below do that.
public protocol QueueDriver: Sendable {
    /// Whether `text` names a queue of this kind: a URL scheme it owns. The queue directory takes
    /// what no other driver claims and that is no URL.
    static func accepts(_ text: String) -> Bool
    /// In messages: `queue directory`, `PostgreSQL queue`.
    static var kind: String { get }
    /// How the help texts begin for the options only this kind reads (`PostgreSQL:`), so a report of
    /// a worker's settings can leave out another kind's defaults.
    static var optionPrefix: String { get }

    /// The queue `text` names, for a worker (`creating`: a queue directory is made when missing)
    /// or for a command that looks after a queue (nothing is created; one that is not there is an error).
    init(_ text: String, creating: Bool, logger: Logger) throws(ImagePipeError)

    /// The queue as logs name it (never with a password).
    var displayName: String { get }
    /// Whether its jobs may name objects in S3 or Supabase (a queue directory's jobs are its files).
    var takesObjectSources: Bool { get }
    /// The states its jobs can be in, for `queue list` without `--state`.
    var states: [QueueOverview.State] { get }

    /// A worker's queue on it.
    func worker(_ settings: QueueSettings) throws(ImagePipeError) -> any JobQueue
    /// Checks a worker's options that only some kinds take (`--keep-done`), before anything is set up.
    func checkWorkerOptions(keepingDone: Duration?) throws(ImagePipeError)
    /// Services that run beside a worker: a queue directory's cleaner of done/ (`--keep-done`).
    func companions(keepingDone: Duration?) throws(ImagePipeError) -> [any Service]
    /// What `imagepipe config check` cannot check without touching the queue, and what it can: an
    /// error for a queue that cannot be used.
    func checkConfiguration() throws(ImagePipeError) -> [String]

    /// Jobs by state, the oldest wait, the rate, who runs what, the latest failures.
    func overview() async throws(ImagePipeError) -> QueueOverview
    /// Up to `limit` jobs in `state`.
    func list(_ state: QueueOverview.State, limit: Int) async throws(ImagePipeError) -> [QueueOverview.Job]
    /// Puts failed jobs back to wait: those named by `ids`, or all.
    func retry(_ ids: [String]) async throws(ImagePipeError) -> AdminReport
    /// Cancels jobs: waiting ones at once, running ones at their next safe point.
    func cancel(_ ids: [String]) async throws(ImagePipeError) -> AdminReport
    /// Deletes finished jobs older than `age`.
    func prune(olderThan age: Duration, includingFailed: Bool) async throws(ImagePipeError) -> AdminReport
    /// Opens the queue once for a producer and runs `body`, which adds jobs in batches through the
    /// session it is given (`imagepipe enqueue`); refused before `body` runs by a queue that takes
    /// no enqueue, so nothing is read for it.
    func enqueue<T: Sendable>(
        _ request: EnqueueRequest, _ body: @Sendable (EnqueueSession) async throws(ImagePipeError) -> T
    ) async throws(ImagePipeError) -> T
}

extension QueueDriver {
    /// The error for an operation or option this kind of queue does not have (exit status 2).
    public func unsupported(_ what: String, _ instead: String) -> ImagePipeError {
        .configuration("\(what) does not apply to a \(Self.kind) (\(displayName)): \(instead)")
    }

}

/// What a worker's queue is opened with; each kind takes the settings that apply to it.
public struct QueueSettings: Sendable {
    /// Queue directory: how often the inbox is scanned in full, and how long a delivery must stay still.
    public var rescanInterval: Duration
    public var quietPeriod: Duration
    /// PostgreSQL: how long a claim holds before another worker may take the job over.
    public var lease: Duration
    /// PostgreSQL: how long finished jobs are kept.
    public var retention: Duration
    /// Whether notifications are sent, so the queue keeps what is to be sent with each outcome.
    public var notifies: Bool

    /// Settings, each kind reading its own.
    public init(rescanInterval: Duration, quietPeriod: Duration, lease: Duration, retention: Duration, notifies: Bool) {
        self.rescanInterval = rescanInterval
        self.quietPeriod = quietPeriod
        self.lease = lease
        self.retention = retention
        self.notifies = notifies
    }
}

/// What an admin command did: lines for standard output (one per job), lines for standard error
/// (a job that could not be done, a summary), and whether something asked for was not done (exit status 1).
public struct AdminReport: Sendable, Equatable {
    /// One line per job done, as scripts read them.
    public var lines: [String] = []
    /// What could not be done, each naming the job and why.
    public var problems: [String] = []
    /// The summary for people.
    public var summary: String?
    /// How many jobs it changed.
    public var count = 0

    public init(lines: [String] = [], problems: [String] = [], summary: String? = nil, count: Int = 0) {
        self.lines = lines
        self.problems = problems
        self.summary = summary
        self.count = count
    }
}

/// When an enqueued job is due.
public enum JobRunAt: Sendable, Equatable {
    /// At once.
    case now
    /// At this time.
    case at(Date)
    /// This long after the queue's clock says now.
    case after(Duration)
}

/// How `imagepipe enqueue` adds jobs.
public struct EnqueueRequest: Sendable {
    /// Add none for a source already waiting or running.
    public var unique: Bool
    /// Claim order: lower first.
    public var priority: Int
    public var runAt: JobRunAt
    public var options: QueuedJobOptions

    public init(unique: Bool = false, priority: Int = 0, runAt: JobRunAt = .now, options: QueuedJobOptions = QueuedJobOptions()) {
        self.unique = unique
        self.priority = priority
        self.runAt = runAt
        self.options = options
    }
}

/// A producer's open queue: `add` adds a job per source and returns each new job's ID in order,
/// nil where `unique` found the source waiting or running.
public struct EnqueueSession: Sendable {
    public let add: @Sendable ([String]) async throws(ImagePipeError) -> [String?]

    public init(add: @escaping @Sendable ([String]) async throws(ImagePipeError) -> [String?]) { self.add = add }
}
