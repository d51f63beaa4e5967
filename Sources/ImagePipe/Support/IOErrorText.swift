// Readable reasons for failed file operations, for error messages that name the file and the reason.
import Foundation

/// Turns Foundation and POSIX errors into short reasons.
public enum IOErrorText {
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
