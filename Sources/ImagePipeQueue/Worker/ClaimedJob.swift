// A job a worker has claimed from a queue, with what the queue needs to settle it later, or why it cannot run.
public import ImagePipe

/// One claimed job.
public struct ClaimedJob: Sendable, Equatable {
    /// Identifies the job within its queue (a queue directory: its name; PostgreSQL: its row ID).
    public var id: String
    /// What the pipeline runs; its ``Job/attempt`` is this claim's attempt, from 1.
    public var job: Job
    /// The source as the producer gave it, for records (a path or a URL).
    public var source: String
    /// Why the queue could not make a job of what it claimed (its options cannot be used, its
    /// source is too long): the worker fails it for good without running it, as trying again could
    /// not help. The queue never settles it by itself: the worker's state machine decides, and the
    /// job fails with this reason and is notified like any other.
    public var refusal: ImagePipeError?

    /// Creates a claimed job.
    public init(id: String, job: Job, source: String? = nil, refusal: ImagePipeError? = nil) {
        self.id = id
        self.job = job
        self.source = source ?? job.relativePath
        self.refusal = refusal
    }

    /// The result a refused job fails with: its one attempt failed with the refusal.
    public var refusalResult: JobResult? {
        refusal.map { JobResult(source: source, status: .failed, error: $0, attempts: job.attempt) }
    }
}
