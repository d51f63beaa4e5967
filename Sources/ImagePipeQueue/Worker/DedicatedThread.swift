// A task executor on a thread of its own, for work that CPU-bound image jobs must not delay.
import Foundation

/// Runs tasks that prefer it on one dedicated thread.
///
/// Lease renewals run here: if they shared the Swift cooperative pool (two threads on a two-core
/// machine) with anything that blocks, or a Dispatch queue with libvips, a long burst of compression
/// could delay a heartbeat past the lease and let another worker take jobs that are nearly done.
final class DedicatedThread: TaskExecutor, @unchecked Sendable {
    /// The heartbeat thread, started on first use.
    static let heartbeats = DedicatedThread(name: "imagepipe.heartbeat")

    // Guarded by `condition`.
    private var jobs: [UnownedJob] = []
    private let condition = NSCondition()

    private init(name: String) {
        let thread = Thread { [unowned self] in self.serve() }
        thread.name = name
        thread.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    private func serve() {
        while true {
            condition.lock()
            while jobs.isEmpty { condition.wait() }
            let batch = jobs
            jobs.removeAll(keepingCapacity: true)
            condition.unlock()
            for job in batch { job.runSynchronously(on: asUnownedTaskExecutor()) }
        }
    }
}
