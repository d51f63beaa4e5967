// A worker's name among the workers of one queue: `<host>-<pid>-<random>`.
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Names a worker process: its claim area in a queue directory, its lease owner in PostgreSQL.
public enum WorkerIdentity {
    /// A new name: the host, this process and a random part, so a restarted process with the same
    /// ID on the same host is still another worker.
    public static func make() -> String {
        "\(hostName().replacingOccurrences(of: "/", with: "_"))-\(getpid())-\(String(UInt32.random(in: 0...UInt32.max), radix: 16))"
    }

    /// The kernel's host name (no DNS lookup).
    public static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        gethostname(&buffer, buffer.count - 1)
        return String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
