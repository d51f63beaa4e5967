// The periodic readiness checks (queue and storage reachable) as a service, recording each outcome in the Health.
import Dispatch
import Foundation
public import ImagePipe
public import Logging
public import ServiceLifecycle
import Synchronization

/// One readiness check: a name for `/readyz` and the logs, and the work.
public struct ReadinessCheck: Sendable {
    /// `queue`, `storage`.
    public let name: String
    let run: @Sendable () async throws(ImagePipeError) -> Void

    /// A check that runs `run` on Swift's concurrency pool: it must not block.
    public init(_ name: String, _ run: @escaping @Sendable () async throws(ImagePipeError) -> Void) {
        self.name = name
        self.run = run
    }

    /// A check whose work blocks its thread (a storage probe over libcurl): it runs through
    /// ``BlockingIO``, so it never holds up Swift's cooperative pool.
    public static func blocking(_ name: String, _ work: @escaping @Sendable () throws(ImagePipeError) -> Void) -> ReadinessCheck {
        ReadinessCheck(name) { () async throws(ImagePipeError) in try await BlockingIO.run(work) }
    }
}

/// Runs the readiness checks every `interval` until a graceful shutdown, recording each outcome in a
/// ``Health`` (a change from passing to failing, and back, is logged once).
///
/// A check that does not answer within the interval (at least 2 s) counts as failed; it may go on in
/// the background, and is not started again until it has returned.
public final class ReadinessChecks: Service, Sendable {
    let checks: [ReadinessCheck]
    let health: Health
    let interval: Duration
    let logger: Logger
    /// The checks started and not yet returned.
    private let running = Mutex<Set<String>>([])

    /// Creates the service; it checks once at once, then every `interval`.
    public init(_ checks: [ReadinessCheck], health: Health, interval: Duration, logger: Logger) {
        self.checks = checks
        self.health = health
        self.interval = interval
        self.logger = logger
    }

    public func run() async throws {
        let timeout = max(interval, .seconds(2))
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await withDiscardingTaskGroup { group in
                    for check in self.checks {
                        guard self.running.withLock({ $0.insert(check.name).inserted }) else {
                            self.record(check.name, failure: "the previous check has not answered yet")
                            continue
                        }
                        group.addTask { self.record(check.name, failure: await self.outcome(of: check, within: timeout)) }
                    }
                }
                try? await Task.sleep(for: self.interval)
            }
        }
    }

    private func record(_ name: String, failure: String?) {
        let before = health.failing(name)
        health.record(name, failure: failure)
        if let failure, !before {
            logger.warning("readiness check failed", metadata: ["check": "\(name)", "error": "\(failure)"])
        } else if failure == nil && before {
            logger.notice("readiness check passes again", metadata: ["check": "\(name)"])
        }
    }

    /// Why `check` failed, nil when it passed; a check still running after `timeout` fails (and is
    /// left to finish in the background, marked running until it does).
    private func outcome(of check: ReadinessCheck, within timeout: Duration) async -> String? {
        await withCheckedContinuation { (continuation: CheckedContinuation<String?, Never>) in
            let answer = FirstAnswer(continuation)
            let work = Task {
                var failure: String?
                do throws(ImagePipeError) { try await check.run() } catch { failure = error.reason }
                self.running.withLock { _ = $0.remove(check.name) }
                answer.give(failure)
            }
            Task {
                try? await Task.sleep(for: timeout)
                answer.give("no answer within \(timeout.formattedSeconds)")
                withExtendedLifetime(work) {}
            }
        }
    }
}

/// Resumes a continuation with the first answer given, ignoring later ones.
private final class FirstAnswer: Sendable {
    private let continuation: Mutex<CheckedContinuation<String?, Never>?>

    init(_ continuation: CheckedContinuation<String?, Never>) {
        self.continuation = Mutex(continuation)
    }

    func give(_ answer: String?) {
        continuation.withLock { continuation in
            defer { continuation = nil }
            return continuation
        }?.resume(returning: answer)
    }
}
