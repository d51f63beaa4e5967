// What a helper writes to its standard output and error: read by the worker, logged as the helper's, bounded.
import Foundation
import Logging

/// Reads one helper's output pipe on a thread of its own until the helper ends, and logs each line
/// as the helper's (its pid in the metadata). A helper never writes to the worker's own log or
/// terminal: one taken over by a hostile image could forge log lines there, or make the worker's
/// standard error non-blocking and lose the worker's own lines. Lines are cut at 500 characters,
/// and past 200 lines in a helper's life the rest is dropped, said once.
enum HelperOutput {
    static let maxLine = 500
    static let maxLines = 200

    /// Starts reading `descriptor` (the pipe's read end, owned from here) for the helper `pid`.
    static func follow(_ descriptor: Int32, pid: pid_t, logger: Logger) {
        let thread = Thread {
            defer { close(descriptor) }
            var pending: [UInt8] = []
            var lines = 0
            var buffer = [UInt8](repeating: 0, count: 4096)
            func emit(_ bytes: ArraySlice<UInt8>) {
                lines += 1
                if lines > maxLines {
                    if lines == maxLines + 1 {
                        logger.warning("image helper output: further lines dropped", metadata: ["helper_pid": "\(pid)"])
                    }
                    return
                }
                let text = String(decoding: bytes.prefix(maxLine), as: UTF8.self)
                guard !text.allSatisfy(\.isWhitespace) else { return }
                logger.warning("image helper output", metadata: ["helper_pid": "\(pid)", "line": "\(text)"])
            }
            while true {
                let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { break }
                pending += buffer[..<count]
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    emit(pending[..<newline])
                    pending.removeSubrange(...newline)
                }
                // A line that never ends is cut rather than held.
                if pending.count > maxLine {
                    emit(pending[...])
                    pending.removeAll()
                }
            }
            if !pending.isEmpty { emit(pending[...]) }
        }
        thread.name = "imagepipe.helper-output"
        thread.start()
    }
}
