// Standard error shared by log lines, the live progress line and the summary, so they never interleave.
import Foundation
import Synchronization

/// Writes lines to standard error, keeping an optional status line redrawn below them on a terminal.
final class Console: Sendable {
    /// The process-wide console.
    static let shared = Console()

    /// Whether standard error is a terminal (progress is drawn only then).
    let isTerminal: Bool = isatty(STDERR_FILENO) == 1
    private let status = Mutex<String?>(nil)

    /// Prints a line above the status line.
    func line(_ text: String) {
        status.withLock { status in
            var out = isTerminal && status != nil ? "\r\u{1B}[2K" : ""
            out += text + "\n"
            if isTerminal, let status { out += status }
            Self.write(out)
        }
    }

    /// Replaces the status line (terminal only); nil removes it.
    func setStatus(_ text: String?) {
        guard isTerminal else { return }
        status.withLock { status in
            status = text
            Self.write("\r\u{1B}[2K" + (text ?? ""))
        }
    }

    private static func write(_ text: String) {
        var bytes = Array(text.utf8)
        bytes.withUnsafeMutableBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let n = Foundation.write(STDERR_FILENO, buffer.baseAddress! + offset, buffer.count - offset)
                if n <= 0 { if errno == EINTR { continue } else { return } }
                offset += n
            }
        }
    }
}
