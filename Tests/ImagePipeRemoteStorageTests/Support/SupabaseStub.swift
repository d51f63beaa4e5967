// The Supabase Storage stand-in: started per test, queried for what it stored and saw.
import Foundation
import ImagePipeTestSupport
import ImagePipeRemoteStorage
import ImagePipe

/// `supabase_stub.py`, which checks the wire protocol of uploads and reads.
final class SupabaseStub: Sendable {
    let process: HelperProcess
    let key: String

    /// Starts a stub accepting `key`, with faults such as `patch#2=cut`.
    init(key: String, faults: [String] = []) throws {
        self.key = key
        process = try HelperProcess("supabase_stub.py", ["--key", key, "--faults", faults.joined(separator: ",")])
    }

    var url: String { "http://127.0.0.1:\(process.port)" }

    /// What the stub stored (by `bucket/key`) and the requests it saw.
    func state() throws -> (objects: [String: [String: Any]], requests: [[String: Any]]) {
        let state = try fullState()
        return (state["objects"] as? [String: [String: Any]] ?? [:], state["requests"] as? [[String: Any]] ?? [])
    }

    /// The query of every listing, in order: bucket, prefix, limit, offset.
    func listings() throws -> [[String: Any]] {
        try fullState()["listings"] as? [[String: Any]] ?? []
    }

    /// How many names each batch removal (`DELETE /storage/v1/object/BUCKET`) carried, in order.
    func deletions() throws -> [Int] {
        try fullState()["deletions"] as? [Int] ?? []
    }

    private func fullState() throws -> [String: Any] {
        let response = try CurlHTTPClient().perform(HTTPRequest(method: "GET", url: url + "/_stub/state"))
        return try JSONSerialization.jsonObject(with: response.body) as? [String: Any] ?? [:]
    }

    /// Stores `data` at `key` as if it had been uploaded; returns the ETag the stub gives it (unquoted).
    /// Every `.` of the key goes escaped, so a `.` or `..` segment reaches the stub whatever the
    /// HTTP client would make of it.
    @discardableResult
    func seed(_ data: Data, bucket: String = "media", key: String, contentType: String = "image/jpeg") throws -> String {
        let path = "/_stub/object/\(bucket)/" + PercentEncoding.encodePath(key).replacingOccurrences(of: ".", with: "%2E")
        let response = try CurlHTTPClient().perform(
            HTTPRequest(
                method: "PUT", url: url + path,
                headers: [("Content-Type", contentType)], body: data))
        guard response.isSuccess else { throw HelperError("seeding \(key): HTTP \(response.status)") }
        return Digests.md5(data).hexString
    }

    /// A configuration for this stub with fast retries.
    func configuration(
        bucket: String = "media", prefix: String = "", key: String? = nil, publicBaseURL: String? = nil,
        resumableThreshold: Int = 6 << 20, listPageSize: Int = 1000
    ) throws -> SupabaseConfiguration {
        SupabaseConfiguration(
            projectURL: try ServiceEndpoint(parsing: url, what: "SUPABASE_URL"), key: key ?? self.key,
            destination: try RemoteDestination(bucket: bucket, prefix: prefix), publicBaseURL: publicBaseURL,
            resumableThreshold: resumableThreshold, listPageSize: listPageSize, retry: .fast)
    }
}
