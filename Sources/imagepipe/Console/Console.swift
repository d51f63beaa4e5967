// Standard error shared by log lines, the live progress line and the summary, so they never interleave.
import Foundation
import Synchronization

/// Writes lines to standard error, keeping an optional status line redrawn below them on a terminal.
final class Console: Sendable {
    /// The process-wide console.
    static let shared = Console()

    /// Whether standard error is a terminal (progress is drawn only then).
    let isTerminal: Bool = isatty(STDERR_FILENO) == 1
    /// Whether standard output is a terminal too, which then shows its lines where the status line is.
    private let outputIsTerminal: Bool = isatty(STDOUT_FILENO) == 1
    private let status = Mutex<String?>(nil)

    /// Writes whole lines to standard output (a manifest on `-`). When both outputs are a terminal,
    /// the status line is cleared first and drawn again below, so the two never share a line.
    func output(_ lines: Data) {
        status.withLock { status in
            let redraw = isTerminal && outputIsTerminal ? status : nil
            if redraw != nil { Self.write("\r\u{1B}[2K") }
            Self.write(Array(lines), to: STDOUT_FILENO)
            if let redraw { Self.write(redraw) }
        }
    }

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
        write(Array(text.utf8), to: STDERR_FILENO)
    }

    private static func write(_ bytes: [UInt8], to descriptor: Int32) {
        var bytes = bytes
        bytes.withUnsafeMutableBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let n = Foundation.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if n <= 0 { if errno == EINTR { continue } else { return } }
                offset += n
            }
        }
    }
}
