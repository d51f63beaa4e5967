// What a helper is started with: everything it needs before its sandbox closes, and nothing secret.
public import Foundation

/// The settings a worker starts its image helpers with, given on the helper's command line as
/// JSON. Nothing here is secret: a helper's command line can be read by its user's processes.
public struct HelperSettings: Sendable, Codable, Equatable {
    /// Whether the helper applies its sandbox (`--sandbox on`, the default).
    public var sandbox: Bool
    /// The worker's pid: the helper dies with it, and refuses to start if it is already gone.
    public var parent: Int32
    /// The most data memory (RLIMIT_DATA) the helper may map: the working-memory budget and headroom.
    public var dataLimit: Int
    /// libvips threads per image.
    public var threadsPerImage: Int
    /// The compressor's own settings, as its command reads them (opaque to the pool).
    public var compressor: Data
    /// Who the zygote and helpers switch to before they touch anything, when the worker holds
    /// privilege (root, or any capability); nil: they keep the worker's user, with no capability.
    public var identity: HelperIdentity?

    public init(sandbox: Bool, parent: Int32, dataLimit: Int, threadsPerImage: Int, compressor: Data, identity: HelperIdentity? = nil) {
        self.sandbox = sandbox
        self.parent = parent
        self.dataLimit = dataLimit
        self.threadsPerImage = threadsPerImage
        self.compressor = compressor
        self.identity = identity
    }

    /// The hidden subcommand a helper is started with.
    public static let subcommand = "image-helper"

    /// The headroom over the working-memory budget in a helper's data limit: the runtime, libvips'
    /// threads and their stacks, and allocator slack, none of which the budget counts.
    public static let dataHeadroom = 1 << 30

    /// The environment a helper gets: the worker's own variables that tune or locate libvips and the
    /// allocator, and nothing else (no credentials, no configuration path). Swift's crash
    /// backtracer is off: it would try to start a process, which the sandbox refuses.
    public static func environment(from worker: [String: String]) -> [String] {
        let kept = worker.filter { name, _ in name.hasPrefix("VIPS_") || name.hasPrefix("MALLOC_") || name == "VIPSHOME" }
        // LD_BIND_NOW: the zygote binds every symbol once as it starts, so that no helper forked
        // from it binds them again on first use. glibc.malloc.hugetlb: a helper lives for one job,
        // so every buffer it allocates is memory never touched before, faulted in page by page
        // (a photo's work took twice the worker's page faults, about 4 % of its CPU on the bench
        // corpus); in transparent huge pages it takes a fault a 2 MiB page (docs/performance.md,
        // "Image helpers").
        return kept.map { "\($0.key)=\($0.value)" }.sorted() + [
            "SWIFT_BACKTRACE=enable=no", "LD_BIND_NOW=1", "GLIBC_TUNABLES=glibc.malloc.hugetlb=1",
        ]
    }
}
