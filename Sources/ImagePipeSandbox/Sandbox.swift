// The sandbox an image helper applies to itself, and the self-test's probes of what it refuses.
import CSandbox
import Foundation

/// The sandbox of an image helper (see `ips_sandbox_apply` for what it refuses and why).
public enum Sandbox {
    /// Why the sandbox could not be applied.
    public struct Failure: Error, Sendable {
        public let reason: String
    }

    /// Applies the whole sandbox to this process for good (a helper started from the executable, the
    /// self-test), with `dataLimit` bytes of data memory and files of at most `fileSizeLimit` bytes
    /// (its outputs' memory files; 0 for either: the inherited limit). Returns the Landlock ABI it
    /// used, 0 where the kernel has none (seccomp alone).
    public static func apply(dataLimit: Int, fileSizeLimit: Int) -> Result<Int, Failure> {
        var options = Self.options(dataLimit: dataLimit, fileSizeLimit: fileSizeLimit)
        var result = ips_sandbox_result()
        var error = [CChar](repeating: 0, count: 512)
        guard ips_sandbox_apply(&options, &result, &error, error.count) == 0 else { return .failure(Failure(reason: text(error))) }
        return .success(Int(result.landlock_abi))
    }

    /// The part every helper shares (limits, no_new_privs, the shared filter), applied by the zygote
    /// before it forks them: each fork then applies only its own part (``applyOwn()``).
    public static func applyShared(dataLimit: Int, fileSizeLimit: Int) -> Result<Void, Failure> {
        var options = Self.options(dataLimit: dataLimit, fileSizeLimit: fileSizeLimit)
        var error = [CChar](repeating: 0, count: 512)
        guard ips_sandbox_apply_shared(&options, &error, error.count) == 0 else { return .failure(Failure(reason: text(error))) }
        return .success(())
    }

    /// A forked helper's own part: its Landlock domain and its own filter. Returns the Landlock ABI.
    public static func applyOwn() -> Result<Int, Failure> {
        var result = ips_sandbox_result()
        var error = [CChar](repeating: 0, count: 512)
        guard ips_sandbox_apply_own(&result, &error, error.count) == 0 else { return .failure(Failure(reason: text(error))) }
        return .success(Int(result.landlock_abi))
    }

    private static func options(dataLimit: Int, fileSizeLimit: Int) -> ips_sandbox_options {
        var options = ips_sandbox_options()
        options.data_limit_bytes = Int64(dataLimit)
        options.file_size_limit_bytes = Int64(fileSizeLimit)
        return options
    }

    /// Gives up every privilege this process holds (a user id 0, any capability), switching to
    /// `identity` where it runs as root; a process holding none is left as it is. The first thing the
    /// zygote and every helper do (see `ips_privilege_drop`).
    public static func dropPrivilege(to identity: HelperIdentity?) -> Result<Void, Failure> {
        var error = [CChar](repeating: 0, count: 512)
        let target = identity ?? HelperIdentity(user: "", uid: UInt32.max, gid: UInt32.max)
        guard ips_privilege_drop(target.uid, target.gid, &error, error.count) == 0 else {
            return .failure(Failure(reason: "dropping privilege failed: \(text(error))"))
        }
        return .success(())
    }

    /// Whether this process holds privilege: a user id 0 or any capability (the bounding set aside).
    public static var holdsPrivilege: Bool {
        var privilege = ips_privilege()
        return ips_privilege_read(&privilege) == 0 && ips_privilege_is_held(&privilege) != 0
    }

    /// Whether the trap handler reports each call the filter refuses on standard error.
    public static func setReporting(_ on: Bool) { ips_sandbox_set_reporting(on ? 1 : 0) }

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
    static func text(_ buffer: [CChar]) -> String {
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
