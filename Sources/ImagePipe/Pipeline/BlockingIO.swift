// Where async code hands its blocking calls, and the check that none of them runs on Swift's cooperative pool.
import CWaitCheck
import Dispatch
import Foundation
import Synchronization

/// Runs blocking calls (file moves, `fsync`, directory scans, libcurl requests) for async code, on
/// a Dispatch queue instead of Swift's cooperative pool.
///
/// The cooperative pool has one thread per core and does not grow while they block: a `rename` or
/// an `fsync` there holds up every timer, heartbeat and database answer of the process. The rule
/// (see ``JobPipeline``): CPU work runs on the pipeline's compression queue, blocking I/O on
/// Dispatch queues (the pipeline's transfer queue, a store's own, or this one), async work on the
/// cooperative pool, never blocking it.
public enum BlockingIO {
    /// Lanes of their own (see ``BoundedQueue``): a file move must not wait for a compression to
    /// end. Blocking calls from async code are few at a time (a settlement, a claim, a probe).
    private static let queue = BoundedQueue(label: "imagepipe.blocking-io", limit: 16, qos: .userInitiated)

    /// Runs `body` on the blocking-I/O queue and returns its result.
    public static func run<T: Sendable, Failure: Error>(
        _ body: @escaping @Sendable () throws(Failure) -> T
    ) async throws(Failure) -> T {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, Failure>, Never>) in
            queue.async { continuation.resume(returning: StallWatch.watch("a blocking call of the worker's") { Result(catching: body) }) }
        }
        return try result.get()
    }

    /// Whether blocking calls check where they run (`IMAGEPIPE_CHECK_BLOCKING=1`): the tests run
    /// the real binary this way, so a blocking call that reaches the cooperative pool stops it.
    static let checks = ProcessInfo.processInfo.environment["IMAGEPIPE_CHECK_BLOCKING"] == "1"

    /// Stops the process, naming `call`, when checks are on and this thread is one of Swift's
    /// cooperative pool: a blocking call must never run there.
    public static func mayBlock(_ call: @autoclosure () -> String) {
        if let record = recorder {
            if isOnCooperativePool { record(call()) }
            return
        }
        guard checks, isOnCooperativePool else { return }
        let message = "imagepipe: blocking call on Swift's cooperative pool: \(call())\n"
        FileHandle.standardError.write(Data(message.utf8))
        abort()
    }

    /// What the library's own tests see instead of the stop: each call a check caught in the task
    /// that set it (and its child tasks), recorded (``recordingViolations(whenCaught:_:)``).
    /// Task-local, so that tests running beside it record nothing into it.
    @TaskLocal private static var recorder: (@Sendable (String) -> Void)?

    /// Runs `body` with the checks on for its own task, recording each blocking call they catch
    /// instead of stopping the process, and returns the calls caught. `whenCaught` runs on the
    /// caught thread as each is caught, before the call goes on. For tests. It also turns the check
    /// of condition waits on for the rest of the process: harmless, since with no recorder in the
    /// waiting task and `IMAGEPIPE_CHECK_BLOCKING` unset a checked wait goes on unrecorded.
    package static func recordingViolations(
        whenCaught: @escaping @Sendable (String) -> Void = { _ in }, _ body: () async -> Void
    ) async -> [String] {
        checkConditionWaits()
        let caught = Mutex<[String]>([])
        let record: @Sendable (String) -> Void = { call in
            caught.withLock { $0.append(call) }
            whenCaught(call)
        }
        await $recorder.withValue(record) { await body() }
        return caught.withLock { $0 }
    }

    /// Makes each wait on a condition variable a blocking call the checks see: a NIO
    /// `EventLoopFuture.wait()`, a `ConditionLock`, starting an event-loop group (which waits for its
    /// threads, when they have not yet run). None of these passes through imagepipe's own calls to
    /// ``mayBlock(_:)``: the link wraps `pthread_cond_wait` and its timed forms (CWaitCheck), and the
    /// wrapper asks.
    /// On when checks are (the command's start calls it); off, a wait costs one load.
    public static func checkConditionWaitsWhenAsked() {
        if checks { checkConditionWaits() }
    }

    private static func checkConditionWaits() {
        iwc_check_condition_waits { BlockingIO.mayBlock(BlockingIO.conditionWait) }
    }

    /// What a caught wait on a condition variable is called.
    package static let conditionWait = "a wait on a condition variable (a NIO wait(), a ConditionLock, starting an event-loop group)"

    /// How many waits on a condition variable the calling thread has made while they were checked. For tests.
    package static var conditionWaitsOnThisThread: UInt { iwc_condition_waits_on_this_thread() }

    /// Whether the calling thread belongs to Swift's cooperative pool (its Dispatch label on Linux):
    /// what decides whether a checked call is caught.
    package static var isOnCooperativePool: Bool {
        guard let label = queueLabel(nil) else { return false }
        return strcmp(label, "Swift global concurrent queue") == 0
    }
}

@_silgen_name("dispatch_queue_get_label")
private func queueLabel(_ queue: OpaquePointer?) -> UnsafePointer<CChar>?
