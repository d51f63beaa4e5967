// The monitoring address a worker or batch logged once its port was bound (it may have asked for port 0).
import Foundation

extension WorkerProcess {
    /// `HOST:PORT` from the "serving /metrics" log line (text or JSON), waiting for it; nil if it never came.
    public func monitoringAddress(seconds: Double = 60) -> String? {
        guard waitForLog("serving /metrics", seconds: seconds) else { return nil }
        return Self.monitoringAddress(in: log)
    }

    /// `HOST:PORT` from a log's "serving /metrics" line.
    public static func monitoringAddress(in log: String) -> String? {
        guard let line = log.split(separator: "\n").first(where: { $0.contains("serving /metrics") }),
            let range = line.range(of: #"address(=|":")\[?[0-9a-f.:]+\]?:[0-9]+"#, options: .regularExpression)
        else { return nil }
        let match = line[range]
        let value = match.drop { $0 != "=" && $0 != ":" }.drop { $0 == "=" || $0 == ":" || $0 == "\"" }
        return String(value)
    }
}
