// The fault-injecting proxy: one per test, in front of a moto server, with a plan of faults.
import Foundation
import ImagePipeTestSupport

/// `fault_proxy.py` started with a plan; its log says what each request met.
final class FaultProxy: Sendable {
    let process: HelperProcess
    let logPath: String

    /// One logged request.
    struct Entry: Equatable {
        var method: String
        var path: String
        var fault: String
        var contentMD5: String?
        var size: Int
        /// Bytes of the answer's body the client took, for a forwarded request once it is answered.
        var relayed: Int?
    }

    /// Starts a proxy to `upstream` that applies `plan` to requests 1, 2, ... (then passes everything).
    init(upstream: MotoServer, plan: [String]) throws {
        logPath = FileManager.default.temporaryDirectory.path + "/imagepipe-proxy-\(UUID().uuidString.prefix(8)).jsonl"
        process = try HelperProcess(
            "fault_proxy.py",
            [
                "--upstream", "127.0.0.1:\(upstream.port)",
                "--plan", plan.joined(separator: ","), "--log", logPath,
            ])
    }

    deinit {
        process.stop()
        try? FileManager.default.removeItem(atPath: logPath)
    }

    var endpoint: String { "http://127.0.0.1:\(process.port)" }

    /// Every request seen so far, in order.
    func entries() -> [Entry] {
        let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        var entries: [(n: Int, entry: Entry)] = []
        var relayed: [Int: Int] = [:]
        for line in text.split(separator: "\n") {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                let n = object["n"] as? Int
            else { continue }
            if let bytes = object["relayed"] as? Int {
                relayed[n] = bytes
                continue
            }
            entries.append(
                (
                    n,
                    Entry(
                        method: object["method"] as? String ?? "", path: object["path"] as? String ?? "",
                        fault: object["fault"] as? String ?? "", contentMD5: object["content_md5"] as? String,
                        size: object["size"] as? Int ?? 0)
                ))
        }
        return entries.sorted { $0.n < $1.n }.map { item in
            var entry = item.entry
            entry.relayed = relayed[item.n]
            return entry
        }
    }
}
