// `make image`'s archive, as a container runtime would take it: its configuration read back with
// skopeo, its root unpacked with umoci, and batch and watch run in that root as the image says.
import Foundation
import ImagePipeTestSupport
import Testing

/// The archive `make image-test` made, if this run is one.
private let imageArchive = ProcessInfo.processInfo.environment["IMAGEPIPE_IMAGE"]

extension RequiredTool {
    static let skopeo = RequiredTool("skopeo", at: "/usr/bin/skopeo", package: "skopeo")
    static let umoci = RequiredTool("umoci", at: "/usr/bin/umoci", package: "umoci")
}

/// Run by `make image-test` (IMAGEPIPE_IMAGE names the archive); not part of `make test`, as the
/// static release build and the Debian root take many minutes. As root: unpacking keeps the
/// files' owners, and the root is entered with unshare. `make image-test` installs skopeo and umoci;
/// without them a test fails naming the package.
@Suite(
    .offThePool,
    .serialized,
    .enabled(if: imageArchive != nil && getuid() == 0, "make image-test builds the image and sets IMAGEPIPE_IMAGE (as root: umoci, unshare)"))
struct ImageArchiveTests {
    let work = TemporaryDirectory(prefix: "imagepipe-image")

    /// `skopeo inspect` of the archive, read as an OCI archive (podman, skopeo) or as what
    /// `docker load` reads, with `--config` for the image's configuration.
    func inspect(_ transport: String, config: Bool = false) throws -> [String: Any] {
        let archive = try #require(imageArchive)
        let output = try CommandRunner.run(
            executable: try RequiredTool.skopeo.located(), ["inspect"] + (config ? ["--config"] : []) + ["\(transport):\(archive)"])
        try #require(output.status == 0, "skopeo inspect \(transport): \(output.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any])
    }

    @Test func itsConfigurationRunsImagepipeAsAUserOfItsOwnWithItsPortAndVolume() throws {
        let config = try #require(try inspect("oci-archive", config: true)["config"] as? [String: Any])
        #expect(config["Entrypoint"] as? [String] == ["/usr/bin/imagepipe"])
        #expect(config["Cmd"] as? [String] == ["watch", "--config", "/etc/imagepipe/imagepipe.toml"])
        let user = try #require(config["User"] as? String)
        #expect(!user.isEmpty && !user.hasPrefix("0:") && user != "0" && user != "root", "runs as \(user)")
        #expect((config["ExposedPorts"] as? [String: Any])?.keys.sorted() == ["9464/tcp"])
        #expect((config["Volumes"] as? [String: Any])?.keys.sorted() == ["/var/lib/imagepipe"])
        #expect((config["Env"] as? [String] ?? []).contains("IMAGEPIPE_METRICS_ADDRESS=:9464"))
        let labels = config["Labels"] as? [String: String] ?? [:]
        #expect(labels["org.opencontainers.image.description"]?.contains("/healthz") == true, "\(labels)")
        #expect(labels["org.opencontainers.image.licenses"] == "Apache-2.0")
        // The image libraries' minimum versions, as the package's Depends enforce them.
        #expect(labels["io.imagepipe.decoder-minimums"]?.contains("libheif1>=") == true, "\(labels)")

        // What docker load reads (manifest.json beside the same blobs) is the same image: skopeo gives
        // its layers by their uncompressed digests, which the configuration lists as diff_ids.
        let asOCI = try inspect("oci-archive"), asDocker = try inspect("docker-archive")
        let diffIDs = (try inspect("oci-archive", config: true)["rootfs"] as? [String: Any])?["diff_ids"] as? [String]
        #expect(diffIDs != nil && asDocker["Layers"] as? [String] == diffIDs, "\(asDocker) \(String(describing: diffIDs))")
        #expect((asOCI["Layers"] as? [String])?.count == diffIDs?.count)
        #expect(asOCI["Architecture"] as? String == "amd64" || asOCI["Architecture"] as? String == "arm64")
    }

    /// The archive unpacked with umoci; its root, and the image's configuration.
    func unpacked() throws -> (root: String, user: (uid: String, gid: String), env: [String]) {
        let archive = try #require(imageArchive)
        let layout = work.url("layout")
        try FileManager.default.createDirectory(atPath: layout, withIntermediateDirectories: true)
        let untar = try CommandRunner.run(executable: "/usr/bin/tar", ["-xf", archive, "-C", layout])
        try #require(untar.status == 0, "tar: \(untar.stderr)")
        let index = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: layout + "/index.json"))) as? [String: Any])
        let manifests = index["manifests"] as? [[String: Any]] ?? []
        let tag = try #require((manifests.first?["annotations"] as? [String: String])?["org.opencontainers.image.ref.name"])
        let unpack = try CommandRunner.run(
            executable: try RequiredTool.umoci.located(), ["unpack", "--image", "\(layout):\(tag)", work.url("bundle")])
        try #require(unpack.status == 0, "umoci unpack: \(unpack.stderr)")
        let config = try #require(try inspect("oci-archive", config: true)["config"] as? [String: Any])
        let user = (config["User"] as? String ?? "").split(separator: ":").map(String.init)
        try #require(user.count == 2)
        return (work.url("bundle/rootfs"), (user[0], user[1]), config["Env"] as? [String] ?? [])
    }

    /// Runs `arguments` in the root as the image says a container runs: as its user, in its working
    /// directory, with its environment (and `extra` over it), in namespaces of its own with a /proc
    /// of its own, so nothing stays mounted.
    func run(
        _ arguments: [String], in root: String, user: (uid: String, gid: String), env: [String], extra: [String] = []
    ) throws -> CommandRunner.Output {
        try CommandRunner.run(
            executable: "/usr/bin/unshare",
            [
                "--mount", "--pid", "--fork", "--mount-proc", "--root=\(root)", "--wd=/var/lib/imagepipe",
                "/usr/bin/setpriv", "--reuid=\(user.uid)", "--regid=\(user.gid)", "--clear-groups",
                "/usr/bin/env", "-i",
            ] + env + extra + arguments)
    }

    @Test func itsRootRunsABatchAndTheDefaultWatchWithoutSwift() throws {
        let (root, user, env) = try unpacked()
        #expect(!FileManager.default.fileExists(atPath: root + "/usr/lib/swift"), "the root has no Swift")
        let libraries = try run(["/usr/bin/ldd", "/usr/bin/imagepipe"], in: root, user: user, env: env)
        #expect(libraries.status == 0 && !libraries.stdout.contains("not found") && !libraries.stdout.contains("libswift"), "\(libraries)")
        // The metrics port of the image's environment is the host's here (no network namespace of its
        // own): a free one instead.
        let port = ["IMAGEPIPE_METRICS_ADDRESS=127.0.0.1:0"]

        // batch: the fixtures' formats, in the volume, as the image's user.
        try FileManager.default.copyItem(atPath: Fixtures.path("images/formats"), toPath: root + "/var/lib/imagepipe/originals")
        let chown = try CommandRunner.run(executable: "/usr/bin/chown", ["-R", "\(user.uid):\(user.gid)", root + "/var/lib/imagepipe/originals"])
        #expect(chown.status == 0)
        let batch = try run(
            ["imagepipe", "batch", "originals", "--dest", "out", "--manifest", "out/manifest.jsonl"], in: root, user: user, env: env,
            extra: port)
        #expect(batch.status == 0, "\(batch.stderr)")
        let count = Fixtures.files(in: "images/formats").count
        #expect(batch.stderr.contains("\(count) done, 0 failed"), "\(batch.stderr)")
        #expect(FileManager.default.fileExists(atPath: root + "/var/lib/imagepipe/out/landscape-large.jpg"))

        // watch: the image's own command (the example configuration's queue and destination, under
        // the volume), an upload delivered by rename, stopping once the queue is empty.
        let inbox = root + "/var/lib/imagepipe/queue/inbox"
        let hidden = inbox + "/.beach.part"
        try FileManager.default.copyItem(atPath: Fixtures.path("images/formats/landscape.jpg"), toPath: hidden)
        #expect(rename(hidden, inbox + "/beach.jpg") == 0)
        let watch = try run(
            ["/usr/bin/imagepipe", "watch", "--config", "/etc/imagepipe/imagepipe.toml", "--exit-when-empty"], in: root, user: user,
            env: env, extra: port)
        #expect(watch.status == 0, "\(watch.stderr)")
        #expect(FileManager.default.fileExists(atPath: root + "/var/lib/imagepipe/queue/done/beach.jpg.json"), "\(watch.stderr)")
        let variants = FileManager.default.enumerator(atPath: root + "/var/lib/imagepipe/variants")?.allObjects as? [String] ?? []
        #expect(variants.contains { $0.hasSuffix("-large.jpg") }, "\(variants)")
    }
}
