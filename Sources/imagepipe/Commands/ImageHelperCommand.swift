// `imagepipe image-helper`: the hidden command a worker starts its image helpers with.
import ArgumentParser
import CSandbox
import Foundation
import ImagePipe
import ImagePipeSandbox
import ImagePipeVips

/// An image helper: started by a worker, never by hand. It loads libvips, the watermark logo and
/// every codec, puts itself in its sandbox, and serves the worker's jobs on descriptor 3
/// (docs/design.md, "Trust boundaries").
struct ImageHelperCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: HelperSettings.subcommand,
        abstract: "Serve a worker's image work in a sandbox (started by batch and watch).",
        shouldDisplay: false)

    @Option(name: .long, help: "The worker's settings, as JSON.")
    var settings: String?

    @Flag(name: .customLong("zygote"), help: "Load libvips, then fork a helper for each of the worker's requests.")
    var zygote = false

    @Flag(
        name: .customLong("self-test"),
        help: "Apply the sandbox, try what it must refuse (privilege, sockets, files and paths, exec, clocks, scheduling), print each outcome.")
    var selfTest = false

    @Option(
        name: .customLong("helper-user"),
        help: ArgumentHelp("With --self-test: the user to switch to when run as root (default: imagepipe, else nobody).", valueName: "user"))
    var helperUser: String?

    func run() throws {
        ips_ignore_stop_signals()
        if selfTest { return try runSelfTest() }
        guard let json = settings, let settings = try? JSONDecoder().decode(HelperSettings.self, from: Data(json.utf8)) else {
            throw ImagePipeError.configuration("image-helper is started by batch and watch, with their settings")
        }
        // Should the machine run out of memory, a helper goes before its worker. Written first, while
        // /proc/self is this process's own: a change of user hands its files to root.
        if let adjust = FileHandle(forWritingAtPath: "/proc/self/oom_score_adj") {
            adjust.write(Data("1000".utf8))
            try? adjust.close()
        }
        // No privilege anywhere a decoder runs: a root worker's zygote and helpers switch to an
        // unprivileged user, with no capability in any set, before libvips or any module is loaded.
        if case .failure(let failure) = Sandbox.dropPrivilege(to: settings.identity) { HelperServer.refuseToStart(failure.reason) }
        // The worker may have died while this one started: then there is nobody to serve. (After the
        // change of user, which clears the death signal.)
        guard ips_die_with_parent(settings.parent) == 0 else { Foundation.exit(0) }
        // Everything that needs a path happens first, on this, the process's only thread: Landlock
        // binds the thread that applies it and those started after, so libvips may start its
        // threads only once the sandbox is in place. The logo comes over the channel afterwards.
        do {
            try Vips.configure(threadsPerImage: settings.threadsPerImage)
        } catch {
            HelperServer.refuseToStart(error.reason)
        }
        // No process of this user may read or write this one's memory or /proc files: a helper a
        // hostile image took over, on a kernel without Landlock, could otherwise write into the
        // zygote or into another helper. Forks inherit it.
        _ = ips_make_undumpable()
        // A zygote puts the part of the sandbox its helpers share in place, then forks; what follows
        // runs in each helper it forks (or in one started from the executable).
        let makeCompressor = { (logoBytes: Data?) throws(ImagePipeError) -> any ImageCompressor in
            let logo = try logoBytes.map { (bytes) throws(ImagePipeError) in try WatermarkLogo(bytes: bytes, path: "the watermark") }
            let configuration: VipsCompressor.Configuration
            do {
                configuration = try JSONDecoder().decode(VipsCompressor.Configuration.self, from: settings.compressor)
            } catch {
                throw .configuration("the compressor's settings cannot be read: \(error)")
            }
            return try VipsCompressor(configuration: configuration, watermarkLogo: logo)
        }
        if zygote {
            // What every helper would do first for its job, done once here for all of them.
            Vips.warmUpClasses()
            HelperServer.warmUp(makeCompressor: makeCompressor)
            Zygote.serve(parent: settings.parent, sandbox: settings.sandbox ? sandboxLimits(settings) : nil)
        }
        var landlock = 0
        if settings.sandbox {
            let limits = sandboxLimits(settings)
            switch zygote ? Sandbox.applyOwn() : Sandbox.apply(dataLimit: limits.data, fileSizeLimit: limits.fileSize) {
            case .success(let abi): landlock = abi
            case .failure(let failure): HelperServer.refuseToStart(failure.reason)
            }
        }
        HelperServer.serve(sandboxed: settings.sandbox, landlock: landlock, makeCompressor: makeCompressor)
    }

    /// A helper's data limit (the working-memory budget and headroom) and the largest file it may write.
    private func sandboxLimits(_ settings: HelperSettings) -> (data: Int, fileSize: Int) {
        (settings.dataLimit, SandboxedCompressor.maxOutputBytes)
    }

    /// Gives up privilege and applies the sandbox as a helper does, then tries each thing it must
    /// refuse; prints one line each ("refused" or "ALLOWED") and exits 1 if any was allowed.
    private func runSelfTest() throws {
        let identity: HelperIdentity?
        do {
            identity = try HelperIdentity.resolve(helperUser)
        } catch {
            throw ImagePipeError.configuration(error.message)
        }
        if case .failure(let failure) = Sandbox.dropPrivilege(to: identity) {
            throw ImagePipeError.configuration("the sandbox cannot be applied: \(failure.reason)")
        }
        let landlock: Int
        switch Sandbox.apply(dataLimit: HelperSettings.dataHeadroom, fileSizeLimit: SandboxedCompressor.maxOutputBytes) {
        case .success(let abi): landlock = abi
        case .failure(let failure): throw ImagePipeError.configuration("the sandbox cannot be applied: \(failure.reason)")
        }
        // Every probe is meant to be refused: the handler need not report each on standard error.
        Sandbox.setReporting(false)
        let user = identity.map { "runs as \($0)" } ?? "keeps its user, uid \(getuid())"
        print("sandbox: applied (seccomp allow-list; Landlock \(landlock > 0 ? "ABI \(landlock)" : "unavailable"); \(user))")
        var allowed = 0
        for probe in Sandbox.Probe.all {
            let outcome = Sandbox.attempt(probe)
            print("\(probe.name): \(outcome.description)")
            if outcome.wasAllowed { allowed += 1 }
        }
        if allowed > 0 { throw ExitCode(1) }
    }
}
