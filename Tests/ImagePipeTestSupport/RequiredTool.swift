// Programs the tests run that `make test` installs: missing, they skip their tests on a developer's machine and fail them under CI.
import Foundation
public import Testing

/// A program some tests need, found on this machine or not.
///
/// A test that needs one uses `.requires(tool)`. Without the program it is skipped, with the
/// package to install in the reason, except when `CI=true` (as `.ci/run` runs): there a skip would
/// let a green run cover no queue or monitoring code, so the test fails naming what is missing.
public struct RequiredTool: Sendable, CustomStringConvertible {
    /// What the program is called in messages.
    public let name: String
    /// The Debian package that brings it.
    public let package: String
    /// Where it is; nil when it is not installed.
    public let path: String?

    /// A program at a fixed path.
    public init(_ name: String, at path: String, package: String) {
        self.name = name
        self.package = package
        self.path = FileManager.default.isExecutableFile(atPath: path) ? path : nil
    }

    /// A program found by `locate`, which returns its path or nil.
    public init(_ name: String, package: String, locate: () -> String?) {
        self.name = name
        self.package = package
        self.path = locate()
    }

    public var description: String { "\(name) (Debian's \(package))" }

    /// The program's path, or an error naming it and its package.
    public func located() throws -> String {
        guard let path else { throw Missing(tools: [self]) }
        return path
    }

    /// Whether the tests run in CI, where no test may be skipped for want of a program.
    public static var inCI: Bool { ProcessInfo.processInfo.environment["CI"] == "true" }

    /// Whether the tests run as root (CI's do).
    public static var isRoot: Bool { getuid() == 0 }

    public static let promtool = RequiredTool("promtool", at: "/usr/bin/promtool", package: "prometheus")
    public static let prometheus = RequiredTool("prometheus", at: "/usr/bin/prometheus", package: "prometheus")
    public static let chromium = RequiredTool("chromium", at: "/usr/bin/chromium", package: "chromium")
    public static let systemdAnalyze = RequiredTool("systemd-analyze", at: "/usr/bin/systemd-analyze", package: "systemd")
    public static let ip = RequiredTool("ip", at: "/usr/sbin/ip", package: "iproute2")
    public static let setpriv = RequiredTool("setpriv", at: "/usr/bin/setpriv", package: "util-linux")
    public static let exiftool = RequiredTool("exiftool", at: "/usr/bin/exiftool", package: "libimage-exiftool-perl")

    /// Programs that are missing, as an error a test run reports.
    public struct Missing: Error, CustomStringConvertible {
        public let tools: [RequiredTool]
        public var description: String {
            "missing \(tools.map(\.description).joined(separator: ", ")): make test-deps installs it; under CI=true a test never skips for it"
        }
    }
}

extension Trait where Self == ConditionTrait {
    /// Runs the test or suite when every tool is installed. Otherwise it is skipped, or, under
    /// `CI=true`, fails with an error naming the missing tools.
    public static func requires(
        _ tools: RequiredTool..., inCI: Bool = RequiredTool.inCI, sourceLocation: SourceLocation = #_sourceLocation
    ) -> Self {
        .enabled("needs \(tools.map(\.description).joined(separator: ", ")) (make test-deps installs it)", sourceLocation: sourceLocation) {
            let missing = tools.filter { $0.path == nil }
            if missing.isEmpty { return true }
            if inCI { throw RequiredTool.Missing(tools: missing) }
            return false
        }
    }
}

extension Trait where Self == ConditionTrait {
    /// Runs the test as root only (`why`: what it needs root for). Otherwise it is skipped, or,
    /// under `CI=true` (where the tests run as root), fails saying so.
    public static func requiresRoot(
        _ why: String, inCI: Bool = RequiredTool.inCI, isRoot: Bool = RequiredTool.isRoot, sourceLocation: SourceLocation = #_sourceLocation
    ) -> Self {
        .enabled("needs root to \(why)", sourceLocation: sourceLocation) {
            if isRoot { return true }
            if inCI { throw NotRoot(why: why) }
            return false
        }
    }
}

/// A test that needs root run without it under CI.
public struct NotRoot: Error, CustomStringConvertible {
    public let why: String
    public var description: String { "needs root to \(why); under CI=true a test never skips for it" }
}
