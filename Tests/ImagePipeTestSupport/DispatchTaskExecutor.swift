// A task executor on serial Dispatch queues, for tests whose workers must not wait on threads that other tests keep busy.
import Dispatch
import Synchronization

/// Runs tasks that prefer it on serial Dispatch queues, taken in turn.
///
/// imagepipe never blocks Swift's cooperative pool, but its tests do: a synchronous test (most CLI
/// tests wait for processes) holds a pool thread for as long as it runs, and there are as few as
/// two. Nor may these tasks share the threads Dispatch gives concurrent queues, which the image
/// tests beside them keep busy. Serial queues get a thread of their own whenever they have work.
public final class DispatchTaskExecutor: TaskExecutor {
    /// The one the tests share.
    public static let shared = DispatchTaskExecutor(label: "imagepipe.tests.executor", lanes: 8)

    private let lanes: [DispatchQueue]
    private let next = Atomic<Int>(0)

    init(label: String, lanes: Int) {
        self.lanes = (0..<lanes).map { DispatchQueue(label: "\(label).\($0)") }
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let lane = lanes[next.add(1, ordering: .relaxed).newValue % lanes.count]
        lane.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
