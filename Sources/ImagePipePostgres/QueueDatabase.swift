// The queue's statements on one PostgresClient, each retried across lost connections with backoff.
import Foundation
public import ImagePipe
import ImagePipeQueue
public import Logging
import NIOPosix
import PostgresNIO
import Synchronization

/// Runs the queue's SQL.
///
/// Statements are single autocommit statements (migrations aside), so a lost connection never
/// leaves a transaction open, and each can simply be sent again on a new connection. Statements
/// whose outcome a job depends on are retried with backoff until the database answers; an outage is
/// logged once when it starts and once when it ends.
public final class QueueDatabase: Sendable {
    /// The ID and attempt of a claimed job: with the owner, what every update of it must match.
    public struct Fence: Sendable, Hashable {
        /// The job's row ID.
        public var id: Int
        /// The claim's attempt.
        public var attempt: Int
    }

    /// Where the database is.
    public let location: PostgresLocation
    let client: PostgresClient
    let logger: Logger
    /// How long one statement may take before it counts as failed (a hung connection).
    let statementTimeout: Duration = .seconds(10)
    /// Whether the database is lost now, for one log line when an outage begins and one when it ends.
    private let outage = Mutex(DatabaseOutage())
    /// When the last fresh connection was tried (see ``probe()``).
    private let lastProbe = Mutex<ContinuousClock.Instant?>(nil)
    /// Backoff between reconnection attempts: up to 0.1 s doubling to 5 s, with full jitter.
    let reconnect = RetryPolicy(maxAttempts: .max, baseDelay: .milliseconds(100), maxDelay: .seconds(5))

    /// Creates the client (not yet running: see ``run(_:)`` and ``PostgresQueue/open(wake:)``).
    init(location: PostgresLocation, logger: Logger) throws(ImagePipeError) {
        self.location = location
        self.logger = logger
        self.client = PostgresClient(
            configuration: try location.clientConfiguration(),
            backgroundLogger: Logger(label: "imagepipe.postgres", factory: { _ in SwiftLogNoOpLogHandler() }))
    }

    /// Starts NIO's shared event loops, which PostgresNIO connects on, off the cooperative pool.
    ///
    /// The group's first use starts its threads and waits on a condition until each runs: a
    /// blocking call, which `IMAGEPIPE_CHECK_BLOCKING` stops on the pool. ``run(_:logger:creating:_:)``
    /// awaits this before it makes its client (a `PostgresQueue` is made off the pool by its caller);
    /// later uses find the group running.
    static func startEventLoops() async {
        _ = await BlockingIO.run { MultiThreadedEventLoopGroup.singleton }
    }

    /// Connects to `location`, brings the schema up to date, and runs `body` with the database.
    ///
    /// With `creating` false (the commands that look after a queue: `queue status` and the rest), a
    /// database without imagepipe's schema is an error rather than given one: a command that reads
    /// must not leave a schema behind in a database it was pointed at by mistake.
    public static func run<T: Sendable>(
        _ location: PostgresLocation, logger: Logger, creating: Bool = true,
        _ body: @Sendable (QueueDatabase) async throws(ImagePipeError) -> T
    ) async throws(ImagePipeError) -> T {
        await startEventLoops()
        let database = try QueueDatabase(location: location, logger: logger)
        let client = database.client
        let running = Task { await client.run() }
        defer { running.cancel() }
        try await database.prepare(retrying: false, creating: creating)
        return try await body(database)
    }

    /// Brings the schema up to date. Waits for a database that cannot be reached yet (unless
    /// `retrying` is false); a wrong password, role or database name is a configuration error at once.
    /// Without `creating`, a database with no imagepipe schema is refused, and an up-to-date one
    /// is only read.
    func prepare(retrying: Bool = true, creating: Bool = true) async throws(ImagePipeError) {
        var attempt = 0
        while true {
            do {
                // One plain connection first: the pool would report a wrong password only as its
                // circuit breaker tripping, after a minute of retries.
                let probe = try await PostgresConnection.connect(configuration: try location.connectionConfiguration(), id: 0, logger: logger)
                let version: Int?
                do {
                    version = creating ? nil : try await QueueSchema.version(on: probe, logger: logger)
                } catch {
                    try? await probe.close()
                    throw error
                }
                try? await probe.close()
                if !creating, version == nil {
                    throw ImagePipeError.configuration(
                        "no imagepipe queue here: \(location) has no imagepipe schema (imagepipe watch or imagepipe enqueue "
                            + "creates it; check the database name)")
                }
                if creating || (version ?? 0) < QueueSchema.latestVersion {
                    try await QueueSchema.migrate(client, logger: logger)
                }
                if attempt > 0 { logger.notice("PostgreSQL reachable again", metadata: ["queue": "\(location)"]) }
                return
            } catch let error as ImagePipeError {
                throw error
            } catch {
                let failure = DatabaseFailure(error)
                guard retrying, failure.transient, !Task.isCancelled else {
                    // A command that does not wait (enqueue, queue) and finds nothing at the URL's
                    // address was set up wrong, or started before its server: a set-up error, exit
                    // status 2, as the docs say of every wrong set-up. A worker waits instead.
                    let code = !retrying && failure.unreachable ? .configuration : failure.asError.code
                    throw ImagePipeError(code, "cannot open the queue \(location): \(failure.asError.reason)")
                }
                attempt += 1
                if attempt == 1 {
                    logger.warning("cannot reach PostgreSQL yet; retrying", metadata: ["queue": "\(location)", "reason": "\(failure.reason)"])
                }
                try? await Task.sleep(for: reconnect.delay(afterAttempt: min(attempt, 10)))
            }
        }
    }

    /// Runs one statement and collects its rows as `T`; one attempt, within the statement timeout.
    func rows<T: Sendable>(_ query: PostgresQuery, _ decode: @escaping @Sendable (PostgresRow) throws -> T) async throws -> [T] {
        try await rows(.text(query, decode))
    }

    /// Runs one statement and collects its rows; one attempt, within the statement timeout.
    func rows<T: Sendable>(_ statement: Statement<T>) async throws -> [T] {
        try await timed { [client, logger] in try await statement.run(client, logger) }
    }

    /// Runs one statement, retried across lost connections until the database answers.
    ///
    /// - Returns: the rows, or nil when the statement itself failed (logged: a bug or a schema from
    ///   another version) or the task was cancelled.
    func persistently<T: Sendable>(
        _ what: String, _ query: PostgresQuery,
        _ decode: @escaping @Sendable (PostgresRow) throws -> T
    ) async -> [T]? {
        await persistently(what, .text(query, decode))
    }

    /// Runs one statement, retried across lost connections until the database answers (see above).
    func persistently<T: Sendable>(_ what: String, _ statement: Statement<T>) async -> [T]? {
        var attempt = 0
        while !Task.isCancelled {
            do {
                return try await answered(statement)
            } catch {
                guard mayReconnect(after: error, what) else { return nil }
                attempt += 1
                try? await Task.sleep(for: reconnect.delay(afterAttempt: min(attempt, 10)))
            }
        }
        return nil
    }

    /// Runs one statement once; a failure is logged (once per outage) and gives nil.
    func once<T: Sendable>(_ what: String, _ query: PostgresQuery, _ decode: @escaping @Sendable (PostgresRow) throws -> T) async -> [T]? {
        await once(what, .text(query, decode))
    }

    /// Runs one statement once; a failure is logged (once per outage) and gives nil.
    func once<T: Sendable>(_ what: String, _ statement: Statement<T>) async -> [T]? {
        do {
            return try await answered(statement)
        } catch {
            _ = mayReconnect(after: error, what)
            return nil
        }
    }

    /// Runs one statement, noting that the database answered.
    private func answered<T: Sendable>(_ statement: Statement<T>) async throws -> [T] {
        let result = try await rows(statement)
        noteReachable()
        return result
    }

    /// Logs a failed statement (a lost database once per outage) and tells whether trying again may help.
    private func mayReconnect(after error: any Error, _ what: String) -> Bool {
        let failure = DatabaseFailure(error)
        guard failure.transient else {
            logger.error("PostgreSQL refused a statement", metadata: ["statement": "\(what)", "reason": "\(failure.reason)"])
            return false
        }
        noteUnreachable(failure)
        return true
    }

    private func noteUnreachable(_ failure: DatabaseFailure, _ channel: DatabaseOutage.Channel = .statements) {
        if outage.withLock({ $0.failed(channel, reason: failure.reason, at: Date()) }) {
            logger.warning(
                "lost PostgreSQL; reconnecting with backoff, jobs whose leases hold are kept",
                metadata: ["queue": "\(location)", "reason": "\(failure.reason)"])
        }
    }

    private func noteReachable(_ channel: DatabaseOutage.Channel = .statements) {
        let (ended, connectionsFailing) = outage.withLock { ($0.answered(channel), $0.failing.contains(.connections)) }
        if ended {
            logger.notice("PostgreSQL reachable again", metadata: ["queue": "\(location)"])
        } else if channel == .statements && connectionsFailing {
            // Statements answer again: see at once whether new connections are taken too.
            Task { await self.probe() }
        }
    }

    /// Why the queue is not ready while the database is lost; nil while it answers.
    var lostReason: String? { outage.withLock { $0.readiness(at: Date()) } }

    /// Opens and closes one fresh connection, at most one every two seconds: a server shutting down
    /// (or gone) refuses it even while the pool's open connections still answer statements, and
    /// the outage is logged when that happens rather than once the worker lets go of them.
    func probe() async {
        let now = ContinuousClock.now
        let due = lastProbe.withLock { last in
            guard last.map({ now - $0 >= .seconds(2) }) ?? true else { return false }
            last = now
            return true
        }
        guard due else { return }
        do {
            try await timed { [location, logger] in
                let connection = try await PostgresConnection.connect(configuration: try location.connectionConfiguration(), id: 0, logger: logger)
                try? await connection.close()
            }
            noteReachable(.connections)
        } catch {
            let failure = DatabaseFailure(error)
            // A wrong password now (changed while running) says nothing about the server being there.
            if failure.transient { noteUnreachable(failure, .connections) }
        }
    }

    /// Runs `body`, failing it after the statement timeout.
    ///
    /// The caller goes on at the timeout even if `body` ignores its cancellation (a query on a
    /// connection that died without a word): waiting for it, as a task group would, could hang a
    /// worker for good after a database restart.
    private func timed<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let outcome = FirstOutcome<T>()
        return try await withCheckedThrowingContinuation { continuation in
            outcome.deliver(to: continuation)
            let work = Task {
                do { outcome.settle(.success(try await body())) } catch { outcome.settle(.failure(error)) }
            }
            outcome.race(
                Task { [statementTimeout] in
                    try? await Task.sleep(for: statementTimeout)
                    guard !Task.isCancelled else { return }
                    work.cancel()
                    outcome.settle(.failure(ImagePipeError(.storageUnavailable, "no answer within \(statementTimeout)")))
                })
        }
    }

    /// Listens for new jobs of `queue` (`imagepipe_jobs`) and calls `signals.wake` for each, and
    /// after every (re)connection, since notifications sent while not listening are lost; and for
    /// cancel requests (`imagepipe_cancel`), which ask for the claims to be checked at once rather
    /// than at the next heartbeat. Returns when cancelled.
    func listen(for queue: String, signals: QueueSignals) async {
        var attempt = 0
        while !Task.isCancelled {
            do {
                try await client.withConnection { connection in
                    try await connection.listen(on: "imagepipe_jobs") { jobs in
                        try await connection.listen(on: "imagepipe_cancel") { cancels in
                            signals.wake()
                            signals.checkClaims()
                            try await withThrowingTaskGroup { group in
                                group.addTask { for try await notification in jobs where notification.payload == queue { signals.wake() } }
                                group.addTask { for try await _ in cancels { signals.checkClaims() } }
                                // Either ending means the connection did: listen again on a new one.
                                try await group.next()
                                group.cancelAll()
                            }
                        }
                    }
                }
                attempt = 0
            } catch {
                if Task.isCancelled { return }
                attempt += 1
                try? await Task.sleep(for: reconnect.delay(afterAttempt: min(attempt, 10)))
            }
        }
    }
}
