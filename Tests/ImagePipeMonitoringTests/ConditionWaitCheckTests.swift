import Foundation
import ImagePipe
import ImagePipeMonitoring
import Logging
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
        // The promise is kept only once the wait was caught, so the wait surely waits: the test
        // does not depend on which thread gets there first.
        let caught = await BlockingIO.recordingViolations(whenCaught: { _ in promise.succeed(7) }) {
            answer.withLock { $0 = waitInASynchronousHelper(for: promise.futureResult) }
        }
        #expect(caught == [BlockingIO.conditionWait])
        #expect(answer.withLock { $0 } == 7, "the caught wait went on and got its answer")
        try await group.shutdownGracefully()
    }

    @Test func theSameWaitOnADispatchThreadIsNot() async throws {
        let group = await BlockingIO.run { MultiThreadedEventLoopGroup(numberOfThreads: 1) }
        let promise = group.next().makePromise(of: Int.self)
        let waited = Mutex<(answer: Int?, waits: UInt)>((nil, 0))
        let caught = await BlockingIO.recordingViolations {
            await BlockingIO.run {
                let before = BlockingIO.conditionWaitsOnThisThread
                // Kept from the event loop a moment after the wait began, so that it waits.
                group.next().scheduleTask(in: .milliseconds(200)) { promise.succeed(8) }
                let answer = waitInASynchronousHelper(for: promise.futureResult)
                waited.withLock { $0 = (answer, BlockingIO.conditionWaitsOnThisThread - before) }
            }
        }
        #expect(caught.isEmpty, "\(caught)")
        let (answer, waits) = waited.withLock { $0 }
        #expect(answer == 8)
        #expect(waits > 0, "the wait was seen by the check and let through")
        try await group.shutdownGracefully()
    }

    /// The monitoring server starts its event loop off the pool: starting a group waits for its
    /// thread, which the check would stop in every worker started with `--metrics-address`.
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
