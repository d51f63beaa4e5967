// The queue directory's driver: a path names it; its admin is file moves under the directory.
public import Foundation
public import ImagePipe
public import Logging
public import ServiceLifecycle

/// The driver of a queue directory (``QueueDirectory``): any argument that is no URL.
public struct DirectoryDriver: QueueDriver {
    public static func accepts(_ text: String) -> Bool { !text.contains("://") }
    public static var kind: String { "queue directory" }
    public static var optionPrefix: String { "Queue directory:" }

    /// The directory's absolute path.
    public let root: String
    let logger: Logger

    /// The queue directory at `text`; for a command that looks after a queue, it must exist (a
    /// mistyped path does not become a new, empty queue). A worker's is made when it opens it.
    public init(_ text: String, creating: Bool, logger: Logger) throws(ImagePipeError) {
        root = creating ? LocalPath.absolute(text) : try QueueDirectory(existing: text).root
        self.logger = logger
    }

    public var displayName: String { root }
    public var takesObjectSources: Bool { false }
    public var states: [QueueOverview.State] { [.waiting, .running, .done, .failed] }

    public func worker(_ settings: QueueSettings) throws(ImagePipeError) -> any JobQueue {
        try DirectoryQueue(
            directory: QueueDirectory(root: root),
            configuration: .init(rescanInterval: settings.rescanInterval, quietPeriod: settings.quietPeriod, takesOverNotices: settings.notifies),
            logger: logger)
    }

    public func checkWorkerOptions(keepingDone: Duration?) throws(ImagePipeError) {}

    public func cancel(_ ids: [String]) async throws(ImagePipeError) -> AdminReport {
        throw unsupported("queue cancel", "withdraw a waiting job by moving its file out of inbox/")
    }

    public func enqueue<T: Sendable>(
        _ request: EnqueueRequest, _ body: @Sendable (EnqueueSession) async throws(ImagePipeError) -> T
    ) async throws(ImagePipeError) -> T {
        throw unsupported("imagepipe enqueue", "a queue directory takes jobs as files renamed into its inbox/")
    }

    public func companions(keepingDone: Duration?) throws(ImagePipeError) -> [any Service] {
        guard let keepingDone else { return [] }
        return [DoneCleaner(queue: try QueueDirectory(root: root), keep: keepingDone, logger: logger)]
    }

    /// A worker makes the directory; one that exists must be a directory.
    public func checkConfiguration() throws(ImagePipeError) -> [String] {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: root, isDirectory: &isDirectory), !isDirectory.boolValue {
            throw .configuration("queue \(root) is not a directory")
        }
        return []
    }

    private var queue: QueueDirectory {
        get throws(ImagePipeError) { try QueueDirectory(existing: root) }
    }

    public func overview() async throws(ImagePipeError) -> QueueOverview {
        let queue = try self.queue
        return await BlockingIO.run { queue.overview() }
    }

    public func list(_ state: QueueOverview.State, limit: Int) async throws(ImagePipeError) -> [QueueOverview.Job] {
        guard states.contains(state) else { throw unsupported("--state \(state.rawValue)", "only PostgreSQL jobs can be cancelled") }
        let queue = try self.queue
        return await BlockingIO.run { queue.jobs(in: state, limit: limit) }
    }

    /// Moves failed jobs (paths relative to failed/, a folder standing for every job under it; all
    /// when none is named) back to the inbox, their error records removed; an inbox file of the
    /// same name is never replaced.
    public func retry(_ ids: [String]) async throws(ImagePipeError) -> AdminReport {
        let queue = try self.queue
        return try await BlockingIO.run { () throws(ImagePipeError) in
            let failed = FailedJobs(queue: queue)
            let (jobs, unknown) = ids.isEmpty ? (failed.list(), []) : failed.select(ids)
            var report = AdminReport(problems: unknown.map { "no failed job at \($0)" })
            for outcome in try failed.retry(jobs) {
                switch outcome {
                case .returned(let from, let to):
                    report.lines.append("\(from) -> \(to)")
                    report.count += 1
                case .failed(let reason):
                    report.problems.append(reason)
                }
            }
            report.summary = "returned \(report.count) job(s) to the inbox"
            return report
        }
    }

    /// Deletes the originals in done/ with their records (failed/ too with `includingFailed`)
    /// older than `age`; never the inbox or running jobs.
    public func prune(olderThan age: Duration, includingFailed: Bool) async throws(ImagePipeError) -> AdminReport {
        let queue = try self.queue
        let outcome = await BlockingIO.run { QueueRetention(queue: queue).prune(olderThan: age, includingFailed: includingFailed) }
        return AdminReport(problems: outcome.problems, summary: "deleted \(outcome.deleted.count) finished job(s)", count: outcome.deleted.count)
    }
}
