import Foundation
import ImagePipeTestSupport

/// The CLI tests' access to the binary and the fixtures.
enum CommandRunner {
    typealias Output = CommandLineRunner.Output

    static var binary: String { CommandLineRunner.binary }

    static let fixtures = fixturesDirectory(above: #filePath)

    static func run(_ arguments: [String], in directory: String? = nil, input: Data? = nil) throws -> Output {
        try CommandLineRunner.run(arguments, in: directory, input: input)
    }

    /// Copies a fixture into a directory under a new relative name.
    static func copyFixture(_ relative: String, to directory: TemporaryDirectory, as name: String) {
        directory.write(name, try! Data(contentsOf: URL(fileURLWithPath: fixtures + "/" + relative)))
    }
}
