// docs/queues.md, "Setting up PostgreSQL", run as written on this machine's own PostgreSQL: the page
// is a newcomer's first step on a queue, and it once failed on machines without sudo or systemd.
import Foundation
import ImagePipeTestSupport
import Testing

extension RequiredTool {
    /// Debian's tools for its PostgreSQL clusters (`pg_lsclusters`, the init script `service` runs).
    static let postgresCommon = RequiredTool("pg_lsclusters", at: "/usr/bin/pg_lsclusters", package: "postgresql-common")
    static let setsid = RequiredTool("setsid", at: "/usr/bin/setsid", package: "util-linux")
    static let runuser = RequiredTool("runuser", at: "/usr/sbin/runuser", package: "util-linux")
}

/// The page's trial set-up, on the machine's own cluster (Debian's `main`, on localhost:5432), as a
/// reader runs it as root. The block's commands run as written, a password typed on standard
/// input; only `apt-get install` is checked rather than run (a test installs no packages: it finds
/// the package installed). The machine is left as found: the role and database made are dropped,
/// and a cluster that was down is stopped again.
@Suite(.offThePool, .serialized, .requiresRoot("run the page's commands as root, as it says"), .requires(.postgresCommon, .setsid, .runuser))
struct PostgresSetupPageTests {
    static let markerPrefix = "<!-- docs-test: the set-up, as root on this machine's PostgreSQL"

    @Test func theTrialSetUpRunsAsWrittenWithoutSudoOrSystemd() throws {
        let block = try DocumentationPage.load("docs/queues.md").block(markedWith: Self.markerPrefix)
        let lines = block.lines.filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
        // The page must not lean on what such a machine lacks.
        for line in lines {
            let words = ShellWords.commands(in: line).compactMap(\.first)
            #expect(!words.contains("sudo") && !words.contains("systemctl"), "docs/queues.md: `\(line)` needs sudo or systemd")
        }
        let install = try #require(lines.first)
        #expect(ShellWords.commands(in: install) == [["apt-get", "install", "-y", "postgresql"]], "the first line installs: \(install)")
        let installed = try CommandRunner.run(executable: "/usr/bin/dpkg-query", ["-W", "-f", "${Status}", "postgresql"])
        #expect(installed.stdout.hasSuffix("installed"), "postgresql is not installed: \(installed)")

        let cluster = try SystemCluster()
        try cluster.requireNoTrialRoleOrDatabase()
        defer { cluster.restore() }

        let scratch = TemporaryDirectory(prefix: "imagepipe-pgsetup")
        try FileManager.default.createSymbolicLink(atPath: scratch.url("fixtures"), withDestinationPath: Fixtures.root)
        let bin = TemporaryDirectory(prefix: "imagepipe-pgsetup-bin")
        try FileManager.default.createSymbolicLink(atPath: bin.url("imagepipe"), withDestinationPath: CommandRunner.binary)
        let path = bin.path + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        let password = "pw-" + UUID().uuidString.prefix(12)
        // A session of its own has no terminal, so createuser --pwprompt reads the password from
        // standard input as `read` does: once for read, twice for createuser, in the page's order.
        let script = lines.dropFirst().joined(separator: "\n")
        let output = try SystemCluster.detached(
            [try RequiredTool.setsid.located(), "-w", "/bin/bash", "-e", "-o", "pipefail", "-c", script], in: scratch,
            environment: ["PATH": path, "HOME": scratch.path, "PGPASSWORD": ""],
            input: Data(String(repeating: password + "\n", count: 3).utf8))
        #expect(output.status == 0, "exit status \(output.status)\n\(script)\n\(output.stdout)\n\(output.stderr)")
        let photos = try FileManager.default.contentsOfDirectory(atPath: Fixtures.path("images/formats")).filter { $0.hasSuffix(".jpg") }
        #expect(output.stdout.contains("done\t\(photos.count)\n"), "queue status: \(output.stdout)")
        #expect(FileManager.default.fileExists(atPath: scratch.url("out/fixtures/images/formats/landscape-large.jpg")), "\(output.stderr)")
        #expect(!output.stderr.contains(password) && !output.stdout.contains(password), "the password is never shown")
    }
}

/// Debian's PostgreSQL clusters on this machine, as they were before a test, and how to put them back.
private struct SystemCluster {
    let wasOnline: Bool

    init() throws {
        let listed = try CommandRunner.run(executable: "/usr/bin/pg_lsclusters", ["--no-header"])
        #expect(listed.status == 0 && !listed.stdout.isEmpty, "no PostgreSQL cluster on this machine: \(listed)")
        wasOnline = listed.stdout.contains(" online")
    }

    /// Fails, changing nothing, when the machine's cluster has the role or the database the page makes:
    /// a reader's own, which this test must neither trip on nor drop.
    func requireNoTrialRoleOrDatabase() throws {
        if !wasOnline { try Self.service("start") }
        defer { if !wasOnline { _ = try? Self.service("stop") } }
        let found = try Self.psql(
            "SELECT (SELECT count(*) FROM pg_roles WHERE rolname = 'imagepipe') + (SELECT count(*) FROM pg_database WHERE datname = 'images')")
        try #require(
            found == "0",
            "this machine's PostgreSQL already has a role imagepipe or a database images: the page would make them; drop them to run this test")
    }

    /// Drops what the page made (there was neither before) and stops a cluster that was down before.
    func restore() {
        _ = try? Self.service("start")
        _ = try? CommandRunner.run(executable: "/usr/sbin/runuser", ["-u", "postgres", "--", "dropdb", "--if-exists", "images"], in: "/")
        _ = try? CommandRunner.run(executable: "/usr/sbin/runuser", ["-u", "postgres", "--", "dropuser", "--if-exists", "imagepipe"], in: "/")
        if !wasOnline { _ = try? Self.service("stop") }
    }

    static func service(_ action: String) throws {
        let output = try detached(["/usr/sbin/service", "postgresql", action], in: TemporaryDirectory(prefix: "imagepipe-service"))
        try #require(output.status == 0, "service postgresql \(action): \(output)")
    }

    /// Runs a command under Python's `subprocess`, its output in files rather than pipes: a server
    /// it starts inherits them, and would hold a pipe open (and a reader waiting for its end) for as
    /// long as it runs. Foundation's Process never saw the init script end (it stayed a zombie), so
    /// a parent that waits for its own child stands between them.
    static func detached(
        _ command: [String], in directory: TemporaryDirectory, environment: [String: String]? = nil, input: Data? = nil
    ) throws -> CommandRunner.Output {
        let script = """
            import subprocess, sys
            out, err = sys.argv[1], sys.argv[2]
            with open(out, "wb") as o, open(err, "wb") as e:
                sys.exit(subprocess.run(sys.argv[3:], stdin=sys.stdin, stdout=o, stderr=e).returncode)
            """
        let out = directory.url(".stdout"), err = directory.url(".stderr")
        var result = try CommandRunner.run(
            executable: "/usr/bin/python3", ["-c", script, out, err] + command, in: directory.path, environment: environment, input: input)
        result.stdout = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
        result.stderr = (try? String(contentsOfFile: err, encoding: .utf8)) ?? ""
        return result
    }

    static func psql(_ query: String) throws -> String {
        let output = try CommandRunner.run(executable: "/usr/sbin/runuser", ["-u", "postgres", "--", "psql", "-XAtc", query], in: "/")
        try #require(output.status == 0, "psql: \(output)")
        return output.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
