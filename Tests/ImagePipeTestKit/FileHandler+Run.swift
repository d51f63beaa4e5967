// One job through a FileHandler on a pipeline of its own: the one path production takes, for tests of one job at a time.
public import ImagePipe
import Synchronization

extension FileHandler {
    /// Runs `job` through a one-at-a-time pipeline around this handler and returns its result.
    public func run(_ job: Job) async throws -> JobResult {
        try await JobPipeline(handler: self, limits: .init(jobs: 1, uploads: 1)).run(job)
    }
}

extension JobPipeline {
    /// Admits and submits every job as the pipeline has room, as a batch does, and returns their
    /// results in the order they finished.
    public func runAll(_ jobs: [Job]) async throws -> [JobResult] {
        let results = Mutex<[JobResult]>([])
        for job in jobs {
            try await reserve()
            submit(job) { event in
                if case .finished(let result) = event { results.withLock { $0.append(result) } }
            }
        }
        await idle()
        return results.withLock { $0 }
    }
}
