// Local path helpers: absolute paths and file URLs (named apart from swift-system's FilePath).
import Foundation

/// Path helpers shared by storage, the batch scanner and the queue.
public enum LocalPath {
    /// The path made absolute against the current directory, with `.` and `..` resolved and no trailing slash.
    public static func absolute(_ path: String) -> String {
        let url = URL(fileURLWithPath: path).standardizedFileURL
        var result = url.path
        while result.count > 1 && result.hasSuffix("/") { result.removeLast() }
        return result
    }

    /// A `file://` URL for an absolute path, percent-encoded.
    public static func fileURL(_ path: String) -> String {
        URL(fileURLWithPath: path).absoluteString
    }

    /// The directory part of `path`: `""` for a bare name, `/` for an entry of the root; trailing
    /// slashes are ignored (`NSString.deletingLastPathComponent`'s rules, without the bridge).
    public static func parent(of path: String) -> String {
        let trimmed = trimmingTrailingSlashes(path)
        guard let slash = trimmed.lastIndex(of: "/") else { return "" }
        if slash == trimmed.startIndex { return "/" }
        return trimmingTrailingSlashes(String(trimmed[..<slash]))
    }

    /// The last component of `path`, trailing slashes ignored; `/` for the root.
    public static func name(of path: String) -> String {
        let trimmed = trimmingTrailingSlashes(path)
        guard let slash = trimmed.lastIndex(of: "/"), trimmed != "/" else { return trimmed }
        return String(trimmed[trimmed.index(after: slash)...])
    }

    /// `path` without the extension of its last component (a leading dot is a name, not an extension).
    public static func deletingExtension(_ path: String) -> String {
        var trimmed = trimmingTrailingSlashes(path)
        while trimmed.contains("//") { trimmed = trimmed.replacingOccurrences(of: "//", with: "/") }
        let nameStart = trimmed.lastIndex(of: "/").map { trimmed.index(after: $0) } ?? trimmed.startIndex
        guard let dot = trimmed[nameStart...].lastIndex(of: "."), dot > nameStart else { return trimmed }
        return String(trimmed[..<dot])
    }

    private static func trimmingTrailingSlashes(_ path: String) -> String {
        var path = path
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        return path
    }
}
