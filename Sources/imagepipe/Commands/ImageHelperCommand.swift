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
        help: "Apply the sandbox, try what it must refuse (a socket, a connection, opening and creating files, exec), print each outcome.")
    var selfTest = false

    func run() throws {
        ips_ignore_stop_signals()
        if selfTest { return try runSelfTest() }
        guard let json = settings, let settings = try? JSONDecoder().decode(HelperSettings.self, from: Data(json.utf8)) else {
            throw ImagePipeError.configuration("image-helper is started by batch and watch, with their settings")
        }
        // The worker may have died while this one started: then there is nobody to serve.
        guard ips_die_with_parent(settings.parent) == 0 else { Foundation.exit(0) }
        // Everything that needs a path happens first, on this, the process's only thread: Landlock
        // binds the thread that applies it and those started after, so libvips may start its
        // threads only once the sandbox is in place. The logo comes over the channel afterwards.
        do {
            try Vips.configure(threadsPerImage: settings.threadsPerImage)
        } catch {
            HelperServer.refuseToStart(error.reason)
        }
        // Should the machine run out of memory, a helper goes before its worker.
        if let adjust = FileHandle(forWritingAtPath: "/proc/self/oom_score_adj") {
            adjust.write(Data("1000".utf8))
            try? adjust.close()
        }
        // No process of this user may read or write this one's memory or /proc files: a helper a
        // hostile image took over, on a kernel without Landlock, could otherwise write into the
        // zygote, which has no sandbox, or into another helper. (After the write above: the files of
        // /proc/self then belong to root.) Forks inherit it.
        _ = ips_make_undumpable()
        // A zygote stops here and forks; what follows runs in each helper it forks (or in one
        // started from the executable).
        if zygote { Zygote.serve(parent: settings.parent) }
        var landlock = 0
        if settings.sandbox {
            switch Sandbox.apply(dataLimit: settings.dataLimit, fileSizeLimit: SandboxedCompressor.maxOutputBytes) {
            case .success(let abi): landlock = abi
            case .failure(let failure): HelperServer.refuseToStart(failure.reason)
            }
        }
        HelperServer.serve(sandboxed: settings.sandbox, landlock: landlock) { (logoBytes) throws(ImagePipeError) in
            let logo = try logoBytes.map { (bytes) throws(ImagePipeError) in try WatermarkLogo(bytes: bytes, path: "the watermark") }
            let configuration: VipsCompressor.Configuration
            do {
                configuration = try JSONDecoder().decode(VipsCompressor.Configuration.self, from: settings.compressor)
            } catch {
                throw .configuration("the compressor's settings cannot be read: \(error)")
            }
            return try VipsCompressor(configuration: configuration, watermarkLogo: logo)
        }
    }

    /// Applies the sandbox as a helper does, then tries each thing it must refuse; prints one line
    /// each ("refused" or "ALLOWED") and exits 1 if any was allowed.
    private func runSelfTest() throws {
        let landlock: Int
        switch Sandbox.apply(dataLimit: HelperSettings.dataHeadroom, fileSizeLimit: SandboxedCompressor.maxOutputBytes) {
        case .success(let abi): landlock = abi
        case .failure(let failure): throw ImagePipeError.configuration("the sandbox cannot be applied: \(failure.reason)")
        }
        print("sandbox: applied (seccomp; Landlock \(landlock > 0 ? "ABI \(landlock)" : "unavailable"))")
        var allowed = 0
        for probe in Sandbox.Probe.all {
            let outcome = Sandbox.attempt(probe)
            print("\(probe.name): \(outcome.description)")
            if outcome.wasAllowed { allowed += 1 }
        }
        if allowed > 0 { throw ExitCode(1) }
    }
}
