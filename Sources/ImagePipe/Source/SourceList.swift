// A list of sources, one a line, with LF or CRLF line ends: what `batch --from` and `enqueue -` read.
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Reads a list of sources, one path or URL a line, a chunk at a time, so a list of millions of
/// lines is never held whole by `enqueue`.
///
/// A line ends in LF or in CRLF (a list saved on Windows): the CR is no part of the path, which would
/// otherwise name a file that does not exist. Blank lines are ignored, and so is a UTF-8 byte order
/// mark at the very start. Every other byte belongs to the path, spaces included. A line holding a
/// NUL byte, or bytes that are not UTF-8, stops the reading with a `configuration` error naming the
/// list and the line's number: no path holds a NUL, and such a line is more likely a binary file
/// given by mistake than a list.
///
/// All methods block (they read a file or standard input): call them through ``BlockingIO`` from
/// async code.
public final class SourceList: Sendable {
    private struct State {
        var buffer: [UInt8] = []
        /// The number of the next line to hand out, from 1.
        var lineNumber = 1
        var atEnd = false
    }

    /// What error messages call the list: its path, or `standard input`.
    public let name: String
    private let descriptor: Int32
    private let ownsDescriptor: Bool
    private let state = Mutex(State())

    /// How many bytes one read asks for.
    private static let chunkSize = 64 << 10

    /// Opens the list at `path`, or standard input for `-`.
    ///
    /// - Throws: `configuration` when the file cannot be opened.
    public init(path: String) throws(ImagePipeError) {
        if path == "-" {
            name = "standard input"
            descriptor = STDIN_FILENO
            ownsDescriptor = false
            return
        }
        BlockingIO.mayBlock("open the list \(path)")
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .configuration("cannot read the list \(path): \(String(cString: strerror(errno)))") }
        name = path
        descriptor = fd
        ownsDescriptor = true
    }

    deinit { if ownsDescriptor { close(descriptor) } }

    /// Every source of the list at `path` (`-`: standard input), in order.
    public static func read(_ path: String) throws(ImagePipeError) -> [String] {
        let list = try SourceList(path: path)
        var sources: [String] = []
        while true {
            let next = try list.next(upTo: 4096)
            if next.isEmpty { return sources }
            sources += next
        }
    }

    /// Up to `limit` more sources; empty once the list is read to its end.
    ///
    /// - Throws: `configuration` naming the line for a NUL byte or bytes that are not UTF-8, and
    ///   when the list cannot be read.
    public func next(upTo limit: Int) throws(ImagePipeError) -> [String] {
        BlockingIO.mayBlock("read the list \(name)")
        return try state.withLock { (state) throws(ImagePipeError) -> [String] in
            var lines: [String] = []
            var start = 0
            defer { state.buffer.removeFirst(start) }
            while lines.count < limit {
                let newline = state.buffer[start...].firstIndex(of: UInt8(ascii: "\n"))
                if newline == nil, !state.atEnd {
                    state.buffer.removeFirst(start)
                    start = 0
                    try fill(&state)
                    continue
                }
                let end = newline ?? state.buffer.count
                guard end > start || newline != nil else { break }
                var line = state.buffer[start..<end]
                start = newline.map { $0 + 1 } ?? end
                defer { state.lineNumber += 1 }
                if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
                if state.lineNumber == 1, line.starts(with: [0xEF, 0xBB, 0xBF]) { line = line.dropFirst(3) }
                if line.isEmpty { continue }
                guard !line.contains(0) else { throw .configuration("the list \(name), line \(state.lineNumber): holds a NUL byte") }
                guard let text = String(validating: line, as: UTF8.self) else {
                    throw .configuration("the list \(name), line \(state.lineNumber): is not valid UTF-8")
                }
                lines.append(text)
            }
            return lines
        }
    }

    /// Appends the next chunk of the list to the buffer, or marks its end.
    private func fill(_ state: inout State) throws(ImagePipeError) {
        var chunk = [UInt8](repeating: 0, count: Self.chunkSize)
        while true {
            let got = Glibc.read(descriptor, &chunk, chunk.count)
            if got < 0 {
                if errno == EINTR { continue }
                throw .configuration("cannot read the list \(name): \(String(cString: strerror(errno)))")
            }
            if got == 0 { state.atEnd = true } else { state.buffer += chunk[..<got] }
            return
        }
    }
}
