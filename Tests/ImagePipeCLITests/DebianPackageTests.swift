import Foundation
import ImagePipeTestSupport
import ImagePipeVipsTestSupport
import Testing

/// The package `make deb-test` made, if this run is one.
private let debianPackage = ProcessInfo.processInfo.environment["IMAGEPIPE_DEB"]

/// `make deb`'s package on a Debian 12 root that has never seen Swift: it installs with its declared
/// dependencies, creates the user, and its binary processes the fixtures there.
///
/// Run by `make deb-test` (IMAGEPIPE_DEB names the package, IMAGEPIPE_DEBIAN_MIRROR the mirror);
/// not part of `make test`, as the static release build and the root take many minutes.
@Suite(
    .offThePool,
    .serialized,
    .enabled(
        if: debianPackage != nil && getuid() == 0,
        "make deb-test builds the package and sets IMAGEPIPE_DEB (as root: debootstrap, chroot)"))
struct DebianPackageTests {
    static let package = debianPackage
    static let mirror = ProcessInfo.processInfo.environment["IMAGEPIPE_DEBIAN_MIRROR"].flatMap { $0.isEmpty ? nil : $0 }

    let root = TemporaryDirectory(prefix: "imagepipe-debian12")

    /// Runs a shell command inside the root, in namespaces of its own with a /proc of its own, so
    /// nothing stays mounted after it (the root is deleted with the test).
    func inRoot(_ script: String) throws -> CommandRunner.Output {
        try CommandRunner.run(
            executable: "/usr/bin/unshare",
            [
                // --mount-proc mounts on the /proc of the new root, inside the new mount namespace.
                "--mount", "--pid", "--fork", "--mount-proc", "--root=\(root.path)",
                "/usr/bin/env", "-i", "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8", "DEBIAN_FRONTEND=noninteractive",
                "/bin/sh", "-c", script,
            ])
    }

    @Test func installsOnABareDebian12AndRunsABatch() throws {
        let package = try #require(Self.package)
        let bootstrap = try CommandRunner.run(
            executable: "/usr/sbin/debootstrap",
            ["--variant=minbase", "bookworm", root.path] + (Self.mirror.map { [$0] } ?? []))
        try #require(bootstrap.status == 0, "debootstrap: \(bootstrap.stdout.suffix(2000)) \(bootstrap.stderr.suffix(2000))")
        #expect(try inRoot("command -v swift || ls /usr/lib/swift /opt/swift").status != 0, "the root has no Swift")

        try FileManager.default.copyItem(atPath: package, toPath: root.url("tmp/imagepipe.deb"))
        try FileManager.default.removeItem(atPath: root.url("etc/resolv.conf"))
        try FileManager.default.copyItem(atPath: "/etc/resolv.conf", toPath: root.url("etc/resolv.conf"))
        let install = try inRoot("apt-get update -qq && apt-get install -y -qq --no-install-recommends /tmp/imagepipe.deb")
        try #require(install.status == 0, "apt-get install: \(install.stdout.suffix(3000)) \(install.stderr.suffix(3000))")

        // The binary finds every library it links among the packages its dependencies brought.
        let libraries = try inRoot("ldd /usr/bin/imagepipe")
        #expect(libraries.status == 0)
        #expect(
            !libraries.stdout.contains("not found") && !libraries.stdout.contains("libswift") && !libraries.stdout.contains("Foundation"),
            "\(libraries.stdout)")
        #expect(libraries.stdout.contains("libvips.so.42"))
        let depends = try inRoot("dpkg-query -W -f '${Depends}' imagepipe")
        #expect(depends.stdout.contains("libvips42") && depends.stdout.contains("libcurl4"), "\(depends.stdout)")

        let user = try inRoot("getent passwd imagepipe")
        #expect(user.status == 0 && user.stdout.contains(":/var/lib/imagepipe:/usr/sbin/nologin"), "\(user)")
        for path in [
            "usr/lib/systemd/system/imagepipe.service", "usr/lib/systemd/system/imagepipe@.service",
            "etc/imagepipe/imagepipe.toml", "usr/share/bash-completion/completions/imagepipe",
            "usr/share/zsh/vendor-completions/_imagepipe", "usr/share/fish/vendor_completions.d/imagepipe.fish",
        ] {
            #expect(FileManager.default.fileExists(atPath: root.url(path)), "\(path) is installed")
        }
        let unit = try String(contentsOfFile: root.url("usr/lib/systemd/system/imagepipe.service"), encoding: .utf8)
        #expect(unit.contains("ExecStart=/usr/bin/imagepipe watch --config /etc/imagepipe/imagepipe.toml"))
        let config = try inRoot("imagepipe config --config /etc/imagepipe/imagepipe.toml")
        #expect(config.status == 0, "\(config.stderr)")

        // The fixtures' formats, through the installed binary, as the service's user.
        try FileManager.default.copyItem(atPath: Fixtures.path("images/formats"), toPath: root.url("srv/originals"))
        let batch = try inRoot(
            "mkdir -p /srv/out && chown imagepipe /srv/out && "
                + "setpriv --reuid=imagepipe --regid=imagepipe --clear-groups "
                + "imagepipe batch /srv/originals --dest /srv/out --manifest /srv/out/manifest.jsonl --variant thumb=160x160,webp,q70,cover "
                + "--variant photo=640x,jpeg,q80")
        #expect(batch.status == 0, "\(batch.stderr.suffix(3000))")
        let originals = Fixtures.files(in: "images/formats")
        let records = try String(contentsOfFile: root.url("srv/out/manifest.jsonl"), encoding: .utf8).split(separator: "\n")
        #expect(records.count == originals.count)
        #expect(records.allSatisfy { $0.contains("\"status\":\"done\"") }, "\(records.filter { !$0.contains("\"status\":\"done\"") })")
        let thumb = try VipsProbe.info(Data(contentsOf: URL(fileURLWithPath: root.url("srv/out/landscape-thumb.webp"))))
        #expect(thumb.width == 160 && thumb.height == 160)
        let photo = try VipsProbe.info(Data(contentsOf: URL(fileURLWithPath: root.url("srv/out/landscape-photo.jpg"))))
        #expect(photo.width == 640)
    }
}
