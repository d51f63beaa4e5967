// GET requests to servers on loopback through the curl tool: a real HTTP client, not one written for the tests.
import Foundation

/// Talks to a server the tests started (a worker's monitoring port, a Prometheus server).
public enum LoopbackHTTP {
    /// An answer: the status (0 when no connection could be made) and the body.
    public struct Answer: Sendable, CustomStringConvertible {
        public let status: Int
        public let body: String
        public var description: String { "\(status): \(body.prefix(2000))" }
    }

    /// `GET url`, within 10 seconds.
    public static func get(_ url: String) -> Answer {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = ["--silent", "--max-time", "10", "--output", "-", "--write-out", "\n%{http_code}", url]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return Answer(status: 0, body: "") }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        var text = String(decoding: data, as: UTF8.self)
        guard let newline = text.lastIndex(of: "\n") else { return Answer(status: 0, body: text) }
        let status = Int(text[text.index(after: newline)...]) ?? 0
        text.removeSubrange(newline...)
        return Answer(status: status, body: text)
    }

    /// A TCP port on 127.0.0.1 that was free a moment ago (for a server that takes its port as an option).
    public static func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
