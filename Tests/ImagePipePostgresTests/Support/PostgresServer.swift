import Foundation
import ImagePipeTestSupport
import ImagePipePostgres
import Synchronization

/// A PostgreSQL server of the tests' own: `initdb` into a temporary directory, run as `nobody` on a
/// free loopback port, stopped and removed when the test process ends (see `python/postgres_server.py`).
final class PostgresServer: @unchecked Sendable {
    /// One server for the tests that do not stop or restart it; each test uses a database of its own.
    static let shared: PostgresServer = try! PostgresServer()

    private let helper: HelperProcess
    /// One command at a time: answers come back on one pipe, in order.
    private let calls = Mutex(())
    let port: Int
    let password: String
    /// The server's temporary directory (its data directory is `data` inside).
    let root: String

    /// Starts a server; `listen` is an address besides loopback to serve, its /24 let in with the password.
    init(fsync: Bool = false, listen: String? = nil) throws {
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().path + "/python"
        let bin = try Self.tool.located()
        helper = try HelperProcess(
            "postgres_server.py", in: directory,
            ["--bin", bin, "--fsync", fsync ? "on" : "off"] + (listen.map { ["--listen", $0] } ?? []))
        port = helper.port
        password = helper.ready["password"] ?? ""
        root = helper.ready["directory"] ?? ""
    }

    /// The server's programs (`initdb`, `pg_ctl`, `psql`): the folder `pg_config --bindir` names,
    /// or else the newest of Debian's installed versions.
    static let tool = RequiredTool("PostgreSQL's server programs", package: "postgresql") {
        let candidates = [CommandRunner.output(of: "pg_config", ["--bindir"])].compactMap { $0 } + installedVersions()
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0 + "/initdb") }
    }

    /// `/usr/lib/postgresql/N/bin`, newest first.
    private static func installedVersions() -> [String] {
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        return versions.compactMap(Int.init).sorted(by: >).map { "/usr/lib/postgresql/\($0)/bin" }
    }

    /// A URL for `database` and `queue`, without the password (that goes through `PGPASSWORD`).
    func url(database: String = "postgres", queue: String = "images", host: String = "127.0.0.1") -> String {
        "postgres://postgres@\(host):\(port)/\(database)?queue=\(queue)&sslmode=disable"
    }

    /// The environment that gives a worker the password.
    var environment: [String: String] { ["PGPASSWORD": password] }

    /// The location of `url(database:queue:)`, with the password.
    func location(database: String = "postgres", queue: String = "images") throws -> PostgresLocation {
        try PostgresLocation(parsing: url(database: database, queue: queue), environment: environment, home: "/nonexistent")
    }

    /// A new empty database.
    func makeDatabase() throws -> String {
        let name = "t_" + UUID().uuidString.prefix(12).lowercased().replacingOccurrences(of: "-", with: "")
        _ = try sql("CREATE DATABASE \(name)")
        return name
    }

    /// Runs SQL through psql (as the superuser, over the socket) and returns its unaligned output.
    @discardableResult
    func sql(_ statement: String, database: String = "postgres") throws -> String {
        let answer = try calls.withLock { _ in try helper.call(["cmd": "sql", "sql": statement, "database": database]) }
        return answer["output"] as? String ?? ""
    }

    /// `pg_ctl restart -m fast`: every connection is dropped.
    func restart() throws { _ = try calls.withLock { _ in try helper.call(["cmd": "restart"]) } }

    /// `pg_ctl stop -m fast`: every connection is dropped and no new one is taken until ``start()``.
    func stop() throws { _ = try calls.withLock { _ in try helper.call(["cmd": "stop"]) } }

    /// `pg_ctl stop -m smart`, not waiting: new connections are refused at once, while the server
    /// waits for its clients' open connections to close before it goes (as after `docker stop`).
    func stopSmart() throws { _ = try calls.withLock { _ in try helper.call(["cmd": "stop-smart"]) } }

    /// Waits until a server stopping has gone (its `postmaster.pid` removed), up to a minute.
    func waitUntilStopped() throws { _ = try calls.withLock { _ in try helper.call(["cmd": "wait-stopped"]) } }

    /// Starts the server ``stop()`` stopped, on the same port.
    func start() throws { _ = try calls.withLock { _ in try helper.call(["cmd": "start"]) } }
}
