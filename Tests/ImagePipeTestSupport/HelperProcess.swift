// Starts a Python helper beside the tests (a loopback server, a throwaway database) and talks to it.
import Foundation
import Synchronization

/// A helper script running beside the tests.
///
/// Each helper prints one JSON line when it is ready and exits when its standard input closes. The
/// tests hold that pipe, so the helpers stop when the test process ends, even when it crashes.
public final class HelperProcess: @unchecked Sendable {
    /// The fields of the helper's first line.
    public let ready: [String: String]
    private let process: Process
    private let input: Pipe
    private let reader: LineReader

    /// Starts `script` (in `directory`) with `arguments` and waits for its ready line.
    public init(_ script: String, in directory: String, _ arguments: [String] = [], environment: [String: String] = [:]) throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", directory + "/" + script] + arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        input = Pipe()
        let output = Pipe()
        let log = FileManager.default.temporaryDirectory.path + "/imagepipe-\(script)-\(UUID().uuidString.prefix(8)).log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        process.standardInput = input
        process.standardOutput = output
        let errors = FileHandle(forWritingAtPath: log)
        process.standardError = errors
        try process.run()
        try? errors?.close()
        reader = LineReader(output.fileHandleForReading)
        guard let line = reader.readLine(),
            let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        else {
            let printed = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            process.terminate()
            try? FileManager.default.removeItem(atPath: log)
            throw HelperError("\(script) did not start: \(printed.suffix(2000))")
        }
        ready = object.mapValues { "\($0)" }
        // Only needed to explain a failed start; the helper may keep writing to the unlinked file.
        try? FileManager.default.removeItem(atPath: log)
    }

    deinit { stop() }

    /// The port the helper listens on.
    public var port: Int { Int(ready["port"] ?? "") ?? 0 }

    /// Sends one JSON command line and reads one JSON answer line.
    public func call(_ command: [String: String]) throws -> [String: Any] {
        let data = try JSONSerialization.data(withJSONObject: command) + Data("\n".utf8)
        input.fileHandleForWriting.write(data)
        guard let line = reader.readLine(),
            let answer = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        else {
            throw HelperError("no answer to \(command)")
        }
        if let error = answer["error"] as? String { throw HelperError(error) }
        return answer
    }

    /// Stops the helper and waits for it.
    public func stop() {
        guard process.isRunning else { return }
        try? input.fileHandleForWriting.close()
        process.terminate()
        process.waitUntilExit()
    }
}

/// A failure of a test helper.
public struct HelperError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Reads lines from a pipe, keeping what arrived after the last newline.
final class LineReader: @unchecked Sendable {
    private let handle: FileHandle
    private let buffer = Mutex(Data())

    init(_ handle: FileHandle) {
        self.handle = handle
    }

    func readLine() -> String? {
        while true {
            let line: String? = buffer.withLock { data in
                guard let newline = data.firstIndex(of: UInt8(ascii: "\n")) else { return nil }
                let text = String(decoding: data[data.startIndex..<newline], as: UTF8.self)
                data = Data(data[(newline + 1)...])
                return text
            }
            if let line { return line }
            let more = handle.availableData
            if more.isEmpty { return nil }
            buffer.withLock { $0.append(more) }
        }
    }
}
