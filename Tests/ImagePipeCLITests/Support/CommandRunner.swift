import Foundation
import ImagePipeTestKit
import Synchronization

/// Runs the built `imagepipe` binary and captures what it printed.
struct CommandRunner {
    struct Output {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// The binary beside the test bundle, or `IMAGEPIPE_BIN`.
    static let binary: String = {
        if let path = ProcessInfo.processInfo.environment["IMAGEPIPE_BIN"] { return path }
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        return bundle.appendingPathComponent("imagepipe").path
    }()

    static let fixtures: String = {
        var url = URL(fileURLWithPath: #filePath)
        while url.path != "/" {
            url.deleteLastPathComponent()
            if FileManager.default.fileExists(atPath: url.path + "/fixtures/README.md") { return url.path + "/fixtures" }
        }
        fatalError("fixtures/ not found")
    }()

    static func run(_ arguments: [String], in directory: String? = nil) throws -> Output {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        // Read both pipes while the process runs so a full pipe cannot block it.
        let outData = Captured(), errData = Captured()
        let group = DispatchGroup()
        DispatchQueue.global().async(group: group) { outData.set(out.fileHandleForReading.readDataToEndOfFile()) }
        DispatchQueue.global().async(group: group) { errData.set(err.fileHandleForReading.readDataToEndOfFile()) }
        process.waitUntilExit()
        group.wait()
        return Output(status: process.terminationStatus, stdout: String(decoding: outData.get(), as: UTF8.self),
                      stderr: String(decoding: errData.get(), as: UTF8.self))
    }

    /// Copies a fixture into a directory under a new relative name.
    static func copyFixture(_ relative: String, to directory: TemporaryDirectory, as name: String) {
        directory.write(name, try! Data(contentsOf: URL(fileURLWithPath: fixtures + "/" + relative)))
    }
}

/// Bytes handed from a reader thread to the test.
final class Captured: Sendable {
    private let data = Mutex(Data())
    func set(_ value: Data) { data.withLock { $0 = value } }
    func get() -> Data { data.withLock { $0 } }
}
