// A job a worker has claimed from a queue, with what the queue needs to settle it later.
public import ImagePipe

/// One claimed job.
public struct ClaimedJob: Sendable, Equatable {
    /// Identifies the job within its queue (a queue directory: its name; PostgreSQL: its row ID).
    public var id: String
    /// What the pipeline runs; its ``Job/attempt`` is this claim's attempt, from 1.
    public var job: Job
    /// The source as the producer gave it, for records (a path or a URL).
    public var source: String

    /// Creates a claimed job.
    public init(id: String, job: Job, source: String? = nil) {
        self.id = id
        self.job = job
        self.source = source ?? job.relativePath
    }
}
