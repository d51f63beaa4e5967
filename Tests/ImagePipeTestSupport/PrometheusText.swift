// The Prometheus text format read back: families with their types, samples with their labels, and promtool's verdict.
import Foundation

/// One scrape of a `/metrics` endpoint.
public struct PrometheusText: Sendable {
    /// One sample line.
    public struct Sample: Sendable, Equatable {
        public let name: String
        public let labels: [String: String]
        public let value: Double

        /// Whether it is named `name` and has every label of `labels` (an empty value matches a missing label).
        func matches(_ name: String, _ labels: [String: String]) -> Bool {
            self.name == name && labels.allSatisfy { key, value in self.labels[key, default: ""] == value }
        }
    }

    /// The text as scraped.
    public let text: String
    /// Every sample, in order.
    public let samples: [Sample]
    /// Family names and their `# TYPE`.
    public let types: [String: String]

    /// Parses the exposition text (the subset imagepipe and every client library writes: one sample a line).
    public init(_ text: String) {
        self.text = text
        var samples: [Sample] = []
        var types: [String: String] = [:]
        for line in text.split(separator: "\n") {
            if line.hasPrefix("# TYPE ") {
                let parts = line.split(separator: " ")
                if parts.count == 4 { types[String(parts[2])] = String(parts[3]) }
                continue
            }
            if line.hasPrefix("#") { continue }
            guard let valueStart = line.lastIndex(of: " "), let value = Double(line[line.index(after: valueStart)...]) else { continue }
            let series = line[..<valueStart]
            guard let brace = series.firstIndex(of: "{") else {
                samples.append(Sample(name: String(series), labels: [:], value: value))
                continue
            }
            samples.append(
                Sample(name: String(series[..<brace]), labels: Self.labels(series[series.index(after: brace)...].dropLast()), value: value))
        }
        self.samples = samples
        self.types = types
    }

    /// `a="x",b="y"` as a dictionary (escapes undone).
    static func labels(_ text: Substring) -> [String: String] {
        var labels: [String: String] = [:]
        var rest = text
        while let equals = rest.firstIndex(of: "=") {
            let name = String(rest[..<equals]).trimmingCharacters(in: CharacterSet(charactersIn: ", "))
            rest = rest[rest.index(equals, offsetBy: 2)...]
            var value = ""
            var escaped = false
            var end = rest.startIndex
            for index in rest.indices {
                let character = rest[index]
                if escaped {
                    value.append(character == "n" ? "\n" : character)
                    escaped = false
                } else if character == "\\" {
                    escaped = true
                } else if character == "\"" {
                    end = index
                    break
                } else {
                    value.append(character)
                }
            }
            labels[name] = value
            rest = rest[rest.index(after: end)...]
        }
        return labels
    }

    /// The value of the one sample named `name` whose labels include `labels`; nil when there is none.
    public func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        samples.first { $0.matches(name, labels) }?.value
    }

    /// The sum over the samples named `name` whose labels include `labels`.
    public func sum(_ name: String, _ labels: [String: String] = [:]) -> Double {
        samples.filter { $0.matches(name, labels) }.reduce(0) { $0 + $1.value }
    }

    /// What `promtool check metrics` says of the text: its exit status and its complaints.
    public func promtool() throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/promtool")
        process.arguments = ["check", "metrics"]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = output
        try process.run()
        input.fileHandleForWriting.write(Data(text.utf8))
        try input.fileHandleForWriting.close()
        let said = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: said, as: UTF8.self))
    }
}
