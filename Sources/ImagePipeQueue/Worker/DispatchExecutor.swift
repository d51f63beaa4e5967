// A task executor on a serial Dispatch queue of its own, for loops started from code that blocks threads.
import Dispatch

/// Runs tasks that prefer it on a private serial Dispatch queue.
///
/// ``QueueWorker`` is driven by blocking calls (`start()`, `shutdown()`), which may themselves run on
/// Swift's cooperative pool or on Dispatch's global queues (Swift Testing runs synchronous tests
/// there). On Linux neither grows when its threads block, so a few blocked callers could starve a
/// loop that needed them. A private serial queue gets a thread of its own whenever it has work.
final class DispatchExecutor: TaskExecutor {
    private let queue: DispatchQueue

    init(label: String) {
        queue = DispatchQueue(label: label)
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
