import Foundation
import ImagePipe
import ImagePipeMonitoring
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Prometheus
import Synchronization
import Testing

/// `IMAGEPIPE_CHECK_BLOCKING` catches a NIO `wait()` on the cooperative pool: the wait reaches no
/// call of imagepipe's own, only a condition variable, whose calls the link wraps (CWaitCheck).
@Suite(.serialized) struct ConditionWaitCheckTests {
    @Test func aNIOWaitOnTheCooperativePoolIsCaught() async throws {
        let group = await BlockingIO.run { MultiThreadedEventLoopGroup(numberOfThreads: 1) }
        let promise = group.next().makePromise(of: Int.self)
        let answer = Mutex<Int?>(nil)
        // The promise is kept once the wait was caught, so the wait surely waits: the test does not
        // depend on which thread gets there first. A wait never caught gets -1 after ten seconds
        // (NIO keeps a promise's first answer), and fails the test instead of holding it.
        let deadline = group.next().scheduleTask(in: .seconds(10)) { promise.succeed(-1) }
        let caught = await BlockingIO.recordingViolations(whenCaught: { _ in promise.succeed(7) }) {
            answer.withLock { $0 = waitInASynchronousHelper(for: promise.futureResult) }
        }
        deadline.cancel()
        #expect(caught == [BlockingIO.conditionWait])
        #expect(answer.withLock { $0 } == 7, "the caught wait went on and got its answer")
        try await group.shutdownGracefully()
    }

    /// Off the pool the same check runs and lets the wait go on: the thread is not the pool's. (The
    /// real binary's runs in every process test, whose event loops wait off the pool, show it goes on.)
    @Test func aWaitOnADispatchThreadReachesTheCheckAndIsNotThePools() async throws {
        let seen = Mutex<(waits: UInt, onPool: Bool)?>(nil)
        _ = await BlockingIO.recordingViolations {
            await BlockingIO.run {
                let before = BlockingIO.conditionWaitsOnThisThread
                // NIO's lock, never given the value it waits for: it always waits out its 50 ms.
                let lock = ConditionLock(value: 0)
                if lock.lock(whenValue: 1, timeoutSeconds: 0.05) { lock.unlock() }
                seen.withLock { $0 = (BlockingIO.conditionWaitsOnThisThread - before, BlockingIO.isOnCooperativePool) }
            }
        }
        let (waits, onPool) = try #require(seen.withLock { $0 })
        #expect(waits >= 1, "the wait went through the check")
        #expect(!onPool, "and the check found it off the pool")
    }

    /// The monitoring server starts its event loop off the pool: starting a group waits for its
    /// thread, which the check would stop in every worker started with `--metrics-address`. (Only
    /// when the thread has not run by then: a start moved back onto the pool is caught in most
    /// runs, not every one.)
    @Test func startingTheMonitoringServerWaitsOnNothingOnThePool() async throws {
        let registry = PrometheusCollectorRegistry()
        let endpoints = MonitoringEndpoints(
            registry: registry, health: Health(checks: [], stopRequested: { false }, factory: CataloguedMetricsFactory(registry: registry)))
        let server = Mutex<MonitoringServer?>(nil)
        let caught = await BlockingIO.recordingViolations {
            let started = try? await MonitoringServer.start(
                at: try! MonitoringAddress(parsing: "127.0.0.1:0"), endpoints: endpoints, logger: Logger(label: "test"))
            server.withLock { $0 = started }
        }
        #expect(caught.isEmpty, "\(caught)")
        let started = try #require(server.withLock { $0 })
        let running = Task { try await started.run() }
        running.cancel()
        try await running.value
    }
}

/// A synchronous function, as the waits that slip into async code are: calling `wait()` in an async
/// context directly is refused by the compiler (`noasync`), not through a call like this.
private func waitInASynchronousHelper(for future: EventLoopFuture<Int>) -> Int? {
    try? future.wait()
}
