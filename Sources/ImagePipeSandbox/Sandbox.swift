// The sandbox an image helper applies to itself, and the self-test's probes of what it refuses.
import CSandbox
import Foundation

/// The sandbox of an image helper (see `ips_sandbox_apply` for what it refuses and why).
public enum Sandbox {
    /// Why the sandbox could not be applied.
    public struct Failure: Error, Sendable {
        public let reason: String
    }

    /// Applies the sandbox to this process for good, with `dataLimit` bytes of data memory and files
    /// of at most `fileSizeLimit` bytes (its outputs' memory files; 0 for either: the inherited
    /// limit). Returns the Landlock ABI it used, 0 where the kernel has none (seccomp alone).
    public static func apply(dataLimit: Int, fileSizeLimit: Int) -> Result<Int, Failure> {
        var options = ips_sandbox_options()
        options.data_limit_bytes = Int64(dataLimit)
        options.file_size_limit_bytes = Int64(fileSizeLimit)
        var result = ips_sandbox_result()
        var error = [CChar](repeating: 0, count: 512)
        guard ips_sandbox_apply(&options, &result, &error, error.count) == 0 else {
            return .failure(Failure(reason: text(error)))
        }
        return .success(Int(result.landlock_abi))
    }

    /// Closes the worker's memory, environment and `/proc` files to every other process of its user,
    /// its helpers among them: on a kernel without Landlock, a helper could read them otherwise.
    public static func makeWorkerPrivate() {
        _ = ips_make_undumpable()
    }

    /// One thing the sandbox must refuse, tried by the self-test.
    public struct Probe: Sendable, Hashable {
        public let name: String

        /// Every probe the sandbox's C side knows, in its order.
        public static var all: [Probe] {
            var probes: [Probe] = []
            while let name = ips_sandbox_probe_name(probes.count) { probes.append(Probe(name: String(cString: name))) }
            return probes
        }
    }

    /// What a probe met.
    public struct Outcome: Sendable, CustomStringConvertible {
        /// Whether the attempt went through: the sandbox failed to refuse it.
        public let wasAllowed: Bool
        /// The errno it was refused with.
        public let errorNumber: Int32
        /// What was tried and what answered.
        public let detail: String

        public var description: String {
            wasAllowed ? "ALLOWED: \(detail)" : "refused (\(String(cString: strerror(errorNumber)))): \(detail)"
        }
    }

    /// The text a C call wrote into `buffer`, up to its terminating zero.
    private static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Tries `probe` in this process, which should be in the sandbox already.
    public static func attempt(_ probe: Probe) -> Outcome {
        var errorNumber: Int32 = 0
        var detail = [CChar](repeating: 0, count: 512)
        let status = ips_sandbox_probe(probe.name, &errorNumber, &detail, detail.count)
        let text = text(detail)
        if status < 0 { return Outcome(wasAllowed: true, errorNumber: errorNumber, detail: "the probe could not run: \(text)") }
        return Outcome(wasAllowed: status == 1, errorNumber: errorNumber, detail: text)
    }
}
