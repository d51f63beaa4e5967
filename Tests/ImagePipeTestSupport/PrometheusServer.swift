// A real Prometheus server started on loopback for one test, scraping the targets it is given, queried over its HTTP API.
import Foundation

/// Debian's `prometheus` run from a scratch folder: its configuration, its storage, its log.
public final class PrometheusServer: @unchecked Sendable {
    /// Where its web interface and API listen.
    public let address: String
    private let process = Process()
    private let directory: TemporaryDirectory

    /// Whether the binary is installed (`make test-deps` installs it).
    public static var isInstalled: Bool { FileManager.default.isExecutableFile(atPath: "/usr/bin/prometheus") }

    /// Starts a server scraping `targets` (`HOST:PORT`, path /metrics) every second, and waits until it is ready.
    public init(scraping targets: [String]) throws {
        directory = TemporaryDirectory(prefix: "imagepipe-prometheus")
        address = "127.0.0.1:\(LoopbackHTTP.freePort())"
        let list = targets.map { "'\($0)'" }.joined(separator: ", ")
        directory.write(
            "prometheus.yml",
            Data(
                """
                global:
                  scrape_interval: 1s
                  scrape_timeout: 1s
                scrape_configs:
                  - job_name: imagepipe
                    static_configs:
                      - targets: [\(list)]

                """.utf8))
        process.executableURL = URL(fileURLWithPath: "/usr/bin/prometheus")
        process.arguments = [
            "--config.file", directory.url("prometheus.yml"), "--storage.tsdb.path", directory.url("data"),
            "--web.listen-address", address, "--log.level", "warn",
        ]
        let log = directory.url("prometheus.log")
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        try process.run()
        guard eventually(seconds: 60, { LoopbackHTTP.get("http://\(address)/-/ready").status == 200 }) else {
            stop()
            throw HelperError("prometheus did not start: \(log)")
        }
    }

    deinit { stop() }

    /// Stops the server and waits for it.
    public func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }

    /// The instant vector of a PromQL expression: each series' labels (with `__name__`) and value.
    public func query(_ expression: String) -> [(labels: [String: String], value: Double)] {
        let encoded = expression.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? expression
        let answer = LoopbackHTTP.get("http://\(address)/api/v1/query?query=\(encoded)")
        guard answer.status == 200,
            let object = try? JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any],
            let data = object["data"] as? [String: Any], let result = data["result"] as? [[String: Any]]
        else { return [] }
        return result.compactMap { series in
            guard let labels = series["metric"] as? [String: String], let pair = series["value"] as? [Any],
                pair.count == 2, let text = pair[1] as? String, let value = Double(text)
            else { return nil }
            return (labels, value)
        }
    }

    /// The targets' health as Prometheus last saw it (`up`, `down`, `unknown`), by scrape URL.
    public func targetHealth() -> [String: String] {
        let answer = LoopbackHTTP.get("http://\(address)/api/v1/targets")
        guard let object = try? JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any],
            let data = object["data"] as? [String: Any], let active = data["activeTargets"] as? [[String: Any]]
        else { return [:] }
        var health: [String: String] = [:]
        for target in active {
            if let url = target["scrapeUrl"] as? String { health[url] = target["health"] as? String ?? "" }
        }
        return health
    }
}
