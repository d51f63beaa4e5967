// Small path helpers: absolute paths, file URLs and readable I/O error reasons.
import Foundation

/// Path helpers shared by storage, the batch scanner and the queue.
public enum FilePath {
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

    /// A short reason for a Foundation or POSIX error, without Foundation's boilerplate.
    public static func reason(of error: any Error) -> String {
        let nsError = error as NSError
        if let underlying = nsError.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain {
            return String(cString: strerror(Int32(underlying.code)))
        }
        if nsError.domain == NSPOSIXErrorDomain { return String(cString: strerror(Int32(nsError.code))) }
        return nsError.localizedDescription
    }
}
