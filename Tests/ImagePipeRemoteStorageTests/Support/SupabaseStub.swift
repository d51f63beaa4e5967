// The Supabase Storage stand-in: started per test, queried for what it stored and saw.
import Foundation
import ImagePipeTestKit
import ImagePipeRemoteStorage

/// `supabase_stub.py`, which checks the wire protocol of uploads.
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
        let response = try CurlHTTPClient().perform(HTTPRequest(method: "GET", url: url + "/_stub/state"))
        let object = try JSONSerialization.jsonObject(with: response.body) as? [String: Any] ?? [:]
        return (object["objects"] as? [String: [String: Any]] ?? [:], object["requests"] as? [[String: Any]] ?? [])
    }

    /// A configuration for this stub with fast retries.
    func configuration(bucket: String = "media", prefix: String = "", key: String? = nil, publicBaseURL: String? = nil,
                       resumableThreshold: Int = 6 << 20) throws -> SupabaseConfiguration {
        SupabaseConfiguration(projectURL: try ServiceEndpoint(parsing: url, what: "SUPABASE_URL"), key: key ?? self.key,
                              destination: try RemoteDestination(bucket: bucket, prefix: prefix), publicBaseURL: publicBaseURL,
                              resumableThreshold: resumableThreshold, retry: .fast)
    }
}
