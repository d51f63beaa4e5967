// The tests' one way to run the built `imagepipe` and reach the committed fixtures.
public import Foundation

/// Runs the binary (see ``CommandLineRunner``) and copies fixtures into scratch folders.
public enum CommandRunner {
    public typealias Output = CommandLineRunner.Output

    /// The binary under test.
    public static var binary: String { CommandLineRunner.binary }

    /// The absolute path of `fixtures/`.
    public static var fixtures: String { Fixtures.root }

    /// Runs `imagepipe` with the test's environment minus every AWS, Supabase and imagepipe setting, plus
    /// `environment`, optionally in `directory` and with `input` on standard input.
    public static func run(
        _ arguments: [String], in directory: String? = nil, environment: [String: String]? = nil,
        input: Data? = nil
    ) throws -> Output {
        try CommandLineRunner.run(arguments, in: directory, environment: environment, input: input)
    }

    /// Copies a fixture into a directory under a new relative name.
    public static func copyFixture(_ relative: String, to directory: TemporaryDirectory, as name: String) {
        directory.write(name, Fixtures.data(relative))
    }
}
