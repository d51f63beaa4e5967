// The servers a page's runnable blocks may ask for (an S3 store, PostgreSQL, an app that takes
// notifications), on loopback, given to the blocks through the variables a reader would set.
import Foundation
import ImagePipeTestSupport
import Testing

extension RequiredTool {
    /// PostgreSQL's server programs (`initdb`, `pg_ctl`, `psql`): the folder `pg_config --bindir`
    /// names, or else the newest of Debian's installed versions.
    static let postgresServer = RequiredTool("PostgreSQL's server programs", package: "postgresql") {
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? [])
            .compactMap(Int.init).sorted(by: >).map { "/usr/lib/postgresql/\($0)/bin" }
        let candidates = [CommandRunner.output(of: "pg_config", ["--bindir"])].compactMap { $0 } + versions
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0 + "/initdb") }
    }
}

/// Servers started the first time a block asks for them, stopped with the test.
///
/// - `with S3`: moto's S3 server with the bucket `media`; `AWS_ACCESS_KEY_ID`,
///   `AWS_SECRET_ACCESS_KEY`, `AWS_ENDPOINT_URL` and `AWS_REGION` reach it.
/// - `with PostgreSQL`: a server of the tests' own with the role `imagepipe` and its database `images` (as [Setting up PostgreSQL] makes them),
///   as docs/queues.md sets them up, with the jobs that page queues waiting in the queue `images`;
///   `PGPORT` and `PGPASSWORD` reach it at `localhost`.
/// - `with an app`: a receiver of notifications that checks each signature; `APP_URL` and
///   `IMAGEPIPE_NOTIFY_SECRET` reach it.
///
/// Every block also gets `ROOT`, a folder of the scratch folder, for the pages that keep a
/// service's files under a root of its own (`/var/lib/imagepipe` on a server).
final class LoopbackServices {
    private let scratch: TemporaryDirectory
    private var helpers: [String: HelperProcess] = [:]
    private var variables: [String: String] = [:]
    private var app: HelperProcess?

    init(scratch: TemporaryDirectory) {
        self.scratch = scratch
        variables["ROOT"] = scratch.url("srv")
    }

    static let remoteHelpers = Fixtures.repository + "/Tests/ImagePipeRemoteStorageTests/Support/python"
    static let postgresHelpers = Fixtures.repository + "/Tests/ImagePipePostgresTests/Support/python"

    /// The variables of every server `marker` asks for, starting those not yet running.
    func environment(for marker: String) throws -> [String: String] {
        let asked = marker.components(separatedBy: ", with ").dropFirst().map { $0.replacingOccurrences(of: " -->", with: "") }
        for service in asked {
            switch service {
            case "S3": try startS3()
            case "PostgreSQL": try startPostgres()
            case "an app": try startApp()
            default: Issue.record("unknown server in \(marker): \(service)")
            }
        }
        return variables
    }

    private func startS3() throws {
        guard helpers["s3"] == nil else { return }
        let server = try HelperProcess("moto_server.py", in: Self.remoteHelpers)
        let endpoint = "http://127.0.0.1:\(server.port)"
        let client = try HelperProcess("s3_client.py", in: Self.remoteHelpers, [endpoint, "testing", "testing"])
        _ = try client.call(["op": "create_bucket", "bucket": "media"])
        helpers["s3"] = server
        helpers["s3-client"] = client
        variables.merge(
            ["AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_ENDPOINT_URL": endpoint, "AWS_REGION": "us-east-1"]
        ) { $1 }
    }

    private func startPostgres() throws {
        guard helpers["postgres"] == nil else { return }
        let server = try HelperProcess(
            "postgres_server.py", in: Self.postgresHelpers, ["--bin", try RequiredTool.postgresServer.located(), "--fsync", "off"])
        let password = "pw-" + UUID().uuidString.prefix(12)
        for statement in ["CREATE ROLE imagepipe LOGIN PASSWORD '\(password)'", "CREATE DATABASE images OWNER imagepipe"] {
            _ = try server.call(["cmd": "sql", "sql": statement, "database": "postgres"])
        }
        helpers["postgres"] = server
        variables.merge(["PGPORT": String(server.port), "PGPASSWORD": password]) { $1 }
        // The database as the set-up page (docs/queues.md) leaves it: the fixtures' JPEGs queued in
        // its default queue, `images`. That page's worker makes them; here they still wait, the
        // harder case: a page's blocks must hold on it as a reader's would, and a worker of another
        // queue must leave them alone.
        let folder = Fixtures.root + "/images/formats"
        let photos = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".jpg") }.sorted()
        let queued = try CommandRunner.run(
            ["enqueue", "postgres://imagepipe@127.0.0.1:\(server.port)/images?sslmode=disable"] + photos.map { folder + "/" + $0 },
            environment: ["PGPASSWORD": password])
        try #require(queued.status == 0 && !photos.isEmpty, "the set-up page's jobs: \(queued)")
    }

    private func startApp() throws {
        guard app == nil else { return }
        let secret = "secret-" + UUID().uuidString
        let receiver = try HelperProcess("notify_receiver.py", in: Self.remoteHelpers, ["--secret", secret])
        app = receiver
        variables.merge(["APP_URL": "http://127.0.0.1:\(receiver.port)", "IMAGEPIPE_NOTIFY_SECRET": secret]) { $1 }
    }

    /// What is wrong with what the app received: nothing at all, or a notification whose signature
    /// did not check out. None when no block asked for an app.
    func appProblems() throws -> [String] {
        guard let app else { return [] }
        let answer = LoopbackHTTP.get("http://127.0.0.1:\(app.port)/_receiver/state")
        let state = try #require(try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any], "\(answer)")
        let requests = state["requests"] as? [[String: Any]] ?? []
        if requests.isEmpty { return ["the app received no notification"] }
        return requests.compactMap { request in
            request["signature_ok"] as? Bool == true ? nil : "a notification the app could not verify: \(request)"
        }
    }
}
