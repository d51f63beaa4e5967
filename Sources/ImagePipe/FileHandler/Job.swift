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
    /// The path's bytes when a name in it is not valid UTF-8: ``path`` and ``relativePath`` then hold
    /// the escaped form (see ``RawPath/escaped``), and this is what is opened. Nil otherwise.
    public var rawPath: RawPath?
    /// Whether a symbolic link at the path is read through to its target: yes in a batch over the
    /// user's own folder, no in watch mode, where a delivered link could publish any file the worker
    /// can read.
    public var followsLinks: Bool

    /// Creates a job.
    public init(path: String, relativePath: String, attempt: Int = 1, rawPath: RawPath? = nil, followsLinks: Bool = true) {
        self.path = path
        self.relativePath = relativePath
        self.attempt = attempt
        self.rawPath = rawPath
        self.followsLinks = followsLinks
    }

    /// What is opened: ``rawPath`` when set, else ``path``.
    public var sourcePath: RawPath { rawPath ?? RawPath(path) }
}
