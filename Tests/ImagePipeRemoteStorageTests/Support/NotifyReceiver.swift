// The notification receiver: a Python HTTP server started per test that verifies signatures with hmac and records every POST.
import Foundation
import ImagePipeRemoteStorage
import ImagePipeTestSupport

/// `notify_receiver.py`: answers 500 or hangs for the first requests when asked, checks each
/// signature independently of imagepipe, and tells what it saw.
final class NotifyReceiver: Sendable {
    /// One POST as the receiver saw it.
    struct Received: @unchecked Sendable {
        var signatureOK: Bool
        var signatureProblem: String
        /// The parsed body: event, id, job, result.
        var body: [String: Any]
        /// 200, 500, or "hang".
        var answer: String
        /// With a queue directory: whether the job's record was there when the POST arrived.
        var recordExisted: Bool?
        var contentType: String
        /// The W3C trace context the POST carried, if any.
        var traceparent: String?

        var id: String { body["id"] as? String ?? "" }
        var job: String { body["job"] as? String ?? "" }
        var event: String { body["event"] as? String ?? "" }
        var result: [String: Any] { body["result"] as? [String: Any] ?? [:] }
    }

    let process: HelperProcess
    let secret: String

    /// Starts a receiver checking signatures made with `secret`.
    init(secret: String, fail: Int = 0, hang: Int = 0, hangSeconds: Double = 30, queue: String? = nil) throws {
        self.secret = secret
        process = try HelperProcess(
            "notify_receiver.py",
            ["--secret", secret, "--fail", "\(fail)", "--hang", "\(hang)", "--hang-seconds", "\(hangSeconds)"]
                + (queue.map { ["--queue", $0] } ?? []))
    }

    /// The URL to pass as --notify-url.
    var url: String { "http://127.0.0.1:\(process.port)/hooks/imagepipe" }

    /// Every POST so far, in arrival order.
    func received() throws -> [Received] {
        let response = try CurlHTTPClient().perform(HTTPRequest(method: "GET", url: "http://127.0.0.1:\(process.port)/_receiver/state"))
        let state = try JSONSerialization.jsonObject(with: response.body) as? [String: Any] ?? [:]
        return (state["requests"] as? [[String: Any]] ?? []).map { entry in
            Received(
                signatureOK: entry["signature_ok"] as? Bool ?? false, signatureProblem: entry["signature_problem"] as? String ?? "",
                body: entry["body"] as? [String: Any] ?? [:], answer: "\(entry["answer"] ?? "")",
                recordExisted: entry["record_existed"] as? Bool, contentType: entry["content_type"] as? String ?? "",
                traceparent: entry["traceparent"] as? String)
        }
    }
}
