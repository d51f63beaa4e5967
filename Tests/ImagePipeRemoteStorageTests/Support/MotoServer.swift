// One moto S3 server per test process (with and without signature checking), and a boto3 client to check objects.
import Foundation
import ImagePipeTestSupport
import ImagePipe
import ImagePipeRemoteStorage
import Synchronization

/// moto's S3 server on a free loopback port, started on first use and stopped when the tests end.
final class MotoServer: Sendable {
    /// A server that checks every signature (IAM user and key created during moto's free calls).
    static func signed() throws -> MotoServer { try signedServer.get() }
    /// A server without signature checking, for keys moto's own checker gets wrong (non-ASCII, `+`, `(`).
    static func unsigned() throws -> MotoServer { try unsignedServer.get() }

    private static let signedServer = Result { try MotoServer(auth: true) }
    private static let unsignedServer = Result { try MotoServer(auth: false) }

    let process: HelperProcess
    let credentials: AWSCredentials
    private let checker: HelperProcess
    private let checkerLock = Mutex(())

    /// A server of the caller's own, to stop in the middle of a run (``stop()``); without signature
    /// checking, on `port` when given (a server started again where one was stopped).
    static func dedicated(port: Int? = nil) throws -> MotoServer { try MotoServer(auth: false, port: port) }

    /// Stops the server: every later request is refused (an outage of the store).
    func stop() { process.stop() }

    private init(auth: Bool, port: Int? = nil) throws {
        process = try HelperProcess("moto_server.py", (auth ? ["--auth"] : []) + (port.map { ["--port", "\($0)"] } ?? []))
        credentials = AWSCredentials(accessKeyID: process.ready["access_key"] ?? "", secretAccessKey: process.ready["secret_key"] ?? "")
        checker = try HelperProcess("s3_client.py", ["http://127.0.0.1:\(process.port)", credentials.accessKeyID, credentials.secretAccessKey])
    }

    var port: Int { process.port }
    var endpoint: String { "http://127.0.0.1:\(port)" }

    /// A new empty bucket, with a unique name unless given.
    func makeBucket(_ given: String? = nil) throws -> String {
        let name = given ?? "test-" + UUID().uuidString.prefix(13).lowercased()
        _ = try check(["op": "create_bucket", "bucket": name])
        return name
    }

    /// An object as boto3 reads it back; nil when it does not exist.
    func object(_ bucket: String, _ key: String, withBody: Bool = false) throws -> StoredInfo? {
        let answer = try check(["op": "head", "bucket": bucket, "key": key, "body": withBody ? "yes" : ""])
        if answer["missing"] != nil { return nil }
        return StoredInfo(
            size: answer["size"] as? Int ?? -1, sha256: answer["sha256"] as? String ?? "",
            contentType: answer["content_type"] as? String, cacheControl: answer["cache_control"] as? String,
            etag: answer["etag"] as? String ?? "", metadata: answer["metadata"] as? [String: String] ?? [:],
            body: (answer["body"] as? String).flatMap { Data(base64Encoded: $0) } ?? Data())
    }

    /// Every key in a bucket.
    func keys(_ bucket: String) throws -> [String] {
        try check(["op": "keys", "bucket": bucket])["keys"] as? [String] ?? []
    }

    /// Stores a file's bytes, or `size` random bytes, at `key` with boto3, with user `metadata`
    /// (`x-amz-meta-*`); returns the ETag (unquoted).
    @discardableResult
    func put(_ bucket: String, _ key: String, file: String? = nil, size: Int = 0, metadata: [String: String] = [:]) throws -> String {
        let encoded = String(decoding: try JSONSerialization.data(withJSONObject: metadata), as: UTF8.self)
        return try check(["op": "put", "bucket": bucket, "key": key, "file": file ?? "", "size": String(size), "metadata": encoded])["etag"]
            as? String ?? ""
    }

    /// Stores `count` objects `prefix/dNN/NNNNN-NAME` with boto3, cycling through `files`, each with
    /// the user `metadata`, many at once; returns their keys.
    func fill(_ bucket: String, prefix: String, count: Int, files: [String], metadata: [String: String] = [:]) throws -> [String] {
        let encoded = String(decoding: try JSONSerialization.data(withJSONObject: metadata), as: UTF8.self)
        return try check([
            "op": "fill", "bucket": bucket, "prefix": prefix, "count": String(count),
            "files": files.joined(separator: ","), "metadata": encoded,
        ])["keys"] as? [String] ?? []
    }

    /// Keys of multipart uploads started and neither completed nor aborted.
    func pendingUploads(_ bucket: String) throws -> [String] {
        try check(["op": "uploads", "bucket": bucket])["uploads"] as? [String] ?? []
    }

    private func check(_ command: [String: String]) throws -> [String: Any] {
        try checkerLock.withLock { _ in try checker.call(command) }
    }

    /// A configuration for this server: path-style, fast retries for tests.
    func configuration(
        bucket: String, prefix: String = "", secret: String? = nil, endpoint: String? = nil,
        retry: RetryPolicy = .fast, stallTimeout: Duration = .seconds(30),
        multipartThreshold: Int = 8 << 20, partSize: Int = 8 << 20
    ) throws -> S3Configuration {
        S3Configuration(
            destination: try RemoteDestination(bucket: bucket, prefix: prefix), region: "us-east-1",
            endpoint: try ServiceEndpoint(parsing: endpoint ?? self.endpoint, what: "endpoint"),
            credentials: AWSCredentials(accessKeyID: credentials.accessKeyID, secretAccessKey: secret ?? credentials.secretAccessKey),
            multipartThreshold: multipartThreshold, partSize: partSize, retry: retry,
            http: CurlHTTPClient.Configuration(connectTimeout: .seconds(5), stallTimeout: stallTimeout))
    }
}

/// An object read back by the independent client.
struct StoredInfo: Equatable {
    var size: Int
    var sha256: String
    var contentType: String?
    var cacheControl: String?
    var etag: String
    /// The object's user metadata (`x-amz-meta-*`, without the prefix).
    var metadata: [String: String]
    /// The object's bytes as the independent client read them, when asked for.
    var body: Data
}

extension RetryPolicy {
    /// Standard mode with millisecond backoff, so retry tests stay fast.
    static let fast = RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(5), maxDelay: .milliseconds(50))
}

extension Data {
    /// Deterministic pseudo-random bytes (not compressible, unlike zeros).
    static func pattern(_ count: Int, seed: UInt64 = 1) -> Data {
        var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
        // Eight bytes per step keeps multi-MiB bodies quick in debug builds.
        var words = [UInt64](repeating: 0, count: (count + 7) / 8)
        for index in words.indices {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            words[index] = state
        }
        return words.withUnsafeBytes { Data($0.prefix(count)) }
    }

    /// Hex SHA-256.
    var sha256: String { SHA256Digest.hash(self).hex }
}
