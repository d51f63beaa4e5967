// The PostgreSQL queue's driver: a postgres:// URL names it; its admin is statements on the jobs table.
public import Foundation
public import ImagePipe
public import ImagePipeQueue
public import Logging
public import ServiceLifecycle

/// The driver of a PostgreSQL queue (``PostgresQueue``): `postgres://` or `postgresql://`.
public struct PostgresDriver: QueueDriver {
    public static func accepts(_ text: String) -> Bool { PostgresLocation.isURL(text) }
    public static var kind: String { "PostgreSQL queue" }
    public static var optionPrefix: String { "PostgreSQL:" }

    /// Where the queue is.
    public let location: PostgresLocation
    let logger: Logger

    /// The queue at `location`.
    public init(location: PostgresLocation, logger: Logger) {
        self.location = location
        self.logger = logger
    }

    /// The queue the URL names; nothing is connected until a command asks something of it.
    public init(_ text: String, creating: Bool, logger: Logger) throws(ImagePipeError) {
        location = try PostgresLocation(parsing: text)
        self.logger = logger
    }

    public var displayName: String { location.description }
    public var takesObjectSources: Bool { true }
    public var states: [QueueOverview.State] { QueueOverview.State.allCases }

    public func worker(_ settings: QueueSettings) throws(ImagePipeError) -> any JobQueue {
        try PostgresQueue(
            location: location, configuration: .init(lease: settings.lease, retention: settings.retention, keepsNotices: settings.notifies),
            logger: logger)
    }

    public func checkWorkerOptions(keepingDone: Duration?) throws(ImagePipeError) {
        if keepingDone != nil { throw unsupported("--keep-done", "its workers delete finished jobs after --retention days") }
    }

    public func companions(keepingDone: Duration?) throws(ImagePipeError) -> [any Service] {
        try checkWorkerOptions(keepingDone: keepingDone)
        return []
    }

    public func checkConfiguration() throws(ImagePipeError) -> [String] {
        ["that \(location) answers and the role may use it (imagepipe queue status checks, read-only)"]
    }

    /// Runs `body` with the database; one without imagepipe's schema is refused ("no imagepipe
    /// queue here"), not given one, as a missing queue directory is.
    private func withDatabase<T: Sendable>(
        creating: Bool = false, _ body: @Sendable (QueueDatabase) async throws(ImagePipeError) -> T
    ) async throws(ImagePipeError) -> T {
        try await QueueDatabase.run(location, logger: logger, creating: creating, body)
    }

    /// Job IDs as numbers: a queue directory's user who names a file is told what this queue takes.
    private func numbers(_ ids: [String]) throws(ImagePipeError) -> [Int] {
        var numbers: [Int] = []
        for text in ids {
            guard let id = Int(text) else { throw .configuration("'\(text)' is not a job ID: a PostgreSQL queue's jobs are numbered") }
            numbers.append(id)
        }
        return numbers
    }

    public func overview() async throws(ImagePipeError) -> QueueOverview {
        try await withDatabase { database throws(ImagePipeError) in try await database.overview() }
    }

    public func list(_ state: QueueOverview.State, limit: Int) async throws(ImagePipeError) -> [QueueOverview.Job] {
        try await withDatabase { database throws(ImagePipeError) in try await database.list(state, limit: limit) }
    }

    /// Failed jobs by ID (all when none is named; an ID may name a cancelled job too) back to wait,
    /// their attempts and errors cleared.
    public func retry(_ ids: [String]) async throws(ImagePipeError) -> AdminReport {
        let numbers = try self.numbers(ids)
        let named = numbers.isEmpty ? nil : numbers
        let back = try await withDatabase { database throws(ImagePipeError) in try await database.retryFailed(ids: named) }
        // Failed and cancelled jobs both go back: the summary names neither alone.
        var report = AdminReport(summary: "put \(back.count) job(s) back to wait (failed or cancelled before)", count: back.count)
        for id in (named ?? []) where !back.contains(id) {
            report.problems.append("job \(id) was not put back: no such job in the queue \(location.queue), or it is not failed or cancelled")
        }
        return report
    }

    /// Waiting jobs cancelled at once (and told, see ``QueueDatabase/cancel(ids:)``), running ones
    /// asked to stop at their next safe point.
    public func cancel(_ ids: [String]) async throws(ImagePipeError) -> AdminReport {
        let numbers = try self.numbers(ids)
        let outcomes = try await withDatabase { database throws(ImagePipeError) in try await database.cancel(ids: numbers) }
        var report = AdminReport()
        for (id, outcome) in zip(numbers, outcomes) {
            switch outcome {
            case .cancelled:
                report.lines.append("\(id)\tcancelled")
                report.count += 1
            case .requested:
                report.lines.append("\(id)\tcancel_requested")
                report.count += 1
            case .finished(let state): report.problems.append("job \(id) is \(state) already: nothing to cancel")
            case .notFound: report.problems.append("no job \(id) in the queue \(location.queue)")
            }
        }
        return report
    }

    /// Done, failed and cancelled jobs alike (workers also do this after `--retention` days).
    public func prune(olderThan age: Duration, includingFailed: Bool) async throws(ImagePipeError) -> AdminReport {
        guard !includingFailed else { throw unsupported("--include-failed", "prune deletes its done, failed and cancelled jobs alike") }
        let queue = location.queue
        let count = try await withDatabase { database throws(ImagePipeError) in await database.prune(queue: queue, olderThan: age) }
        return AdminReport(summary: "deleted \(count) finished job(s)", count: count)
    }

    /// One connection for the whole session, the schema made on first use; each batch one statement.
    public func enqueue<T: Sendable>(
        _ request: EnqueueRequest, _ body: @Sendable (EnqueueSession) async throws(ImagePipeError) -> T
    ) async throws(ImagePipeError) -> T {
        try await withDatabase(creating: true) { database throws(ImagePipeError) in
            try await body(
                EnqueueSession { sources throws(ImagePipeError) in
                    try await database.enqueue(
                        sources, unique: request.unique, priority: request.priority, runAt: request.runAt, options: request.options
                    ).map { $0.map(String.init) }
                })
        }
    }
}
