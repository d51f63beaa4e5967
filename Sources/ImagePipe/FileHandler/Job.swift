// One unit of work: a source file and the name it goes by in keys and manifests.

/// A source image to process.
public struct Job: Sendable, Hashable {
    /// Where to read the source.
    public var path: String
    /// The source's path relative to the batch root or inbox, e.g. `2024/trip/IMG_1.jpg`; it
    /// provides `{dir}` and `{stem}` for keys and the `source` field of the result.
    public var relativePath: String
    /// Which attempt this is, from 1.
    public var attempt: Int

    /// Creates a job.
    public init(path: String, relativePath: String, attempt: Int = 1) {
        self.path = path
        self.relativePath = relativePath
        self.attempt = attempt
    }
}
