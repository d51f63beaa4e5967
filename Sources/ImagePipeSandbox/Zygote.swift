// The zygote: a helper process that loads libvips once, handles no image, and forks the helpers.
import CSandbox
import Foundation
import ImagePipe
import Logging
import Synchronization

/// Starting a helper from the executable costs about 35 ms of CPU, nearly all of it the dynamic
/// linker relocating the 118 libraries libvips and the Swift runtime bring; a fork of a process that
/// has loaded them, with the pages it then copies and its sandbox, a few milliseconds. So the worker
/// starts one process from the executable, the zygote, which loads libvips and then only forks:
/// every helper is a fork of it. The zygote never reads an image. It gives up its privilege before
/// it loads libvips, and puts in place the part of the sandbox its helpers share (limits,
/// no_new_privs, the shared allow-list filter), so that a fork inherits it; each helper then applies
/// its own part (its Landlock domain, and its own filter, which names its pid).
///
/// A forked helper is the worker's own child (the zygote forks it with CLONE_PARENT), so the worker
/// reaps it and reads how it ended like any helper. What a fork shares with its zygote, and an executed helper would not, is
/// its address layout, stack canary and pointer guard; so a crash, which could tell a hostile image
/// whether a guess at them was right, starts a new zygote (docs/design.md, "Trust boundaries").
public enum Zygote {
    /// The command-line flag that makes `image-helper` a zygote.
    public static let flag = "--zygote"

    /// In the zygote, after libvips is loaded: puts the part of the sandbox its helpers share in place
    /// (`sandbox`: the data and file size limits; nil with the sandbox off), says it is ready, then
    /// forks a helper for each of the worker's requests. Returns only in a new helper, its channel as
    /// descriptor 3, to apply its own part; the zygote itself ends when the worker closes its end.
    public static func serve(parent: Int32, sandbox limits: (data: Int, fileSize: Int)?) {
        // A fork copies only the thread that calls it: with another thread running (holding a lock,
        // say) the helpers could inherit that lock held for ever. (The shared sandbox checks the same.)
        if let limits {
            if case .failure(let failure) = Sandbox.applyShared(dataLimit: limits.data, fileSizeLimit: limits.fileSize) {
                HelperServer.refuseToStart(failure.reason)
            }
        } else {
            let threads = ips_thread_count()
            guard threads == 1 else { HelperServer.refuseToStart("the zygote has \(threads) threads and cannot fork helpers safely") }
        }
        let ready = HelperReply.ready(sandboxed: false, landlock: 0).encoded()
        guard ready.withUnsafeBytes({ ips_send(HelperServer.channelDescriptor, $0.baseAddress, $0.count, nil, 0, -1) }) >= 0 else { _exit(0) }
        guard ips_zygote_serve(HelperServer.channelDescriptor, parent) == 0 else { _exit(0) }
        // A helper now: `ps` shows it as one, without the flag its zygote was started with.
        forgetArgument(flag)
    }

    /// Blanks an argument in place, in the memory /proc/PID/cmdline reads.
    private static func forgetArgument(_ argument: String) {
        for index in 0..<Int(CommandLine.argc) {
            guard let pointer = CommandLine.unsafeArgv[index], String(cString: pointer) == argument else { continue }
            memset(pointer, 0, strlen(pointer))
        }
    }
}

extension HelperPool {
    /// How long the zygote may take to fork a helper: milliseconds when it is well.
    static let forkTimeout: Duration = .seconds(5)

    /// Starts the zygote and waits until it is ready; nil when it cannot be (then helpers are started
    /// from the executable, as before, and said so).
    func startZygote() -> HelperProcess? {
        do throws(ImagePipeError) {
            let zygote = try spawn(extraArguments: [Zygote.flag])
            _ = try awaitReady(zygote)
            return zygote
        } catch {
            logger.warning("image helpers are started one by one: no zygote (\(error.reason))")
            return nil
        }
    }

    /// Replaces the zygote with a new one started from the file, after a helper crashed, timed out or
    /// misbehaved: every fork of one zygote has its address layout, stack canary and pointer guard,
    /// and a crash can tell a hostile image whether a guess at them was right. A new zygote's forks
    /// make each crash a guess against new values. (One that ended meanwhile is started again too.)
    func renewZygote() {
        let old = zygote.withLock { zygote -> HelperProcess? in
            defer { zygote = nil }
            return zygote
        }
        old?.killAndReap()
        // Fresh helpers forked by the old one are not used from now on.
        generation.add(1, ordering: .releasing)
        let new = startZygote()
        let lost = zygote.withLock { zygote -> HelperProcess? in
            // Another crash renewed it at the same time: one zygote is kept.
            defer { if zygote == nil { zygote = new } }
            return zygote == nil ? nil : new
        }
        lost?.killAndReap()
    }

    /// A helper forked by the zygote, with its channel's and output's far ends; nil when there is no
    /// zygote, or it could not fork this one (it stays), or it is gone or hung (it is then retired,
    /// and helpers are started from the executable).
    func forkFromZygote(channel: Int32, output: Int32) -> pid_t? {
        zygote.withLock { zygote -> pid_t? in
            guard let current = zygote else { return nil }
            let pid = ips_zygote_fork(current.channel.descriptor, channel, output, HelperChannel.milliseconds(Self.forkTimeout))
            if pid > 0 { return pid }
            let reason = String(cString: strerror(errno))
            if pid == -2 {
                logger.warning(
                    "the image helpers' zygote could not fork a helper; this one is started from the file", metadata: ["reason": "\(reason)"])
                return nil
            }
            let status = current.killAndReap()
            logger.warning(
                "the image helpers' zygote ended; helpers are started one by one from now on",
                metadata: ["reason": "\(reason)", "status": "\(HelperProcess.describe(status))"])
            zygote = nil
            return nil
        }
    }
}
