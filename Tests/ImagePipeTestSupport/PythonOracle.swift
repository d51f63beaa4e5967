// The reference Python packages the tests check against (`ssimulacra2`, `thumbhash`), run as scripts.
public import Foundation

/// Runs a Python script with the reference packages `make test-deps` installs.
public enum PythonOracle {
    /// Why an oracle failed.
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Runs `script` with `arguments` and returns what it printed; a failure names the missing
    /// package when that is the reason.
    public static func run(_ script: String, _ arguments: [String] = [], input: Data? = nil) throws -> String {
        // The python3 first on PATH, where pip installed the packages.
        let output = try CommandRunner.run(executable: "/usr/bin/env", ["python3", "-c", script] + arguments, input: input)
        guard output.status == 0 else {
            throw Failure(description: "python3 failed (\(output.status)); run `make test-deps` for the reference packages: \(output.stderr)")
        }
        return output.stdout
    }
}
