// moto's S3 server for queue tests whose jobs name objects: the storage tests' own helper scripts.
import Foundation
import ImagePipeTestSupport
import Synchronization

/// The S3 server the storage tests use (`Tests/ImagePipeRemoteStorageTests/Support/python`), started
/// once per test process, with boto3 beside it to put objects. Only what queue tests need: a bucket,
/// objects in it, and the environment that lets a worker read them.
final class MotoS3: Sendable {
    static func shared() throws -> MotoS3 { try server.get() }
    private static let server = Result { try MotoS3() }

    private let process: HelperProcess
    private let client: HelperProcess
    private let calls = Mutex(())
    let accessKey: String
    let secretKey: String

    private init() throws {
        let scripts = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../ImagePipeRemoteStorageTests/Support/python").standardizedFileURL.path
        // Without signature checking: moto's own check refuses every request for a key with `.` or
        // `..` segments, boto3's own included, while S3 signs such paths as they are.
        process = try HelperProcess("moto_server.py", in: scripts)
        accessKey = process.ready["access_key"] ?? ""
        secretKey = process.ready["secret_key"] ?? ""
        client = try HelperProcess("s3_client.py", in: scripts, ["http://127.0.0.1:\(process.port)", accessKey, secretKey])
    }

    var endpoint: String { "http://127.0.0.1:\(process.port)" }

    /// What a worker needs to read the server's objects (`--endpoint` aside).
    var environment: [String: String] {
        ["AWS_ACCESS_KEY_ID": accessKey, "AWS_SECRET_ACCESS_KEY": secretKey, "AWS_REGION": "us-east-1"]
    }

    /// A new empty bucket with a unique name.
    func makeBucket() throws -> String {
        let name = "test-" + UUID().uuidString.prefix(13).lowercased()
        _ = try call(["op": "create_bucket", "bucket": name])
        return name
    }

    /// Stores a file's bytes at `key`, exactly as written, with boto3.
    func put(_ bucket: String, _ key: String, file: String) throws {
        _ = try call(["op": "put", "bucket": bucket, "key": key, "file": file])
    }

    private func call(_ command: [String: String]) throws -> [String: Any] {
        try calls.withLock { _ in try client.call(command) }
    }
}
