// The reader's one error: what is wrong with a configuration file, and where.

/// A configuration file the reader refuses: its path, the line when there is one, and why.
public struct ConfigurationSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file, as the user named it.
    public let path: String
    /// The line the problem is on; nil for the file as a whole (too long).
    public let line: Int?
    /// Why, in words for the user.
    public let reason: String

    /// An error in `path`, at `line` when there is one.
    public init(path: String, line: Int?, reason: String) {
        self.path = path
        self.line = line
        self.reason = reason
    }

    /// `path:line: reason`, as compilers write it, so editors can jump to the line.
    public var description: String { line.map { "\(path):\($0): \(reason)" } ?? "\(path): \(reason)" }
}
