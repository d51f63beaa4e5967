// The remote-storage CLI tests' access to the binary, with a chosen environment.
import Foundation
import ImagePipeTestSupport

enum CommandRunner {
    typealias Output = CommandLineRunner.Output

    /// Runs `imagepipe` with the test's environment minus every AWS and Supabase setting, plus `environment`.
    static func run(_ arguments: [String], environment: [String: String]) throws -> Output {
        try CommandLineRunner.run(arguments, environment: environment)
    }
}
