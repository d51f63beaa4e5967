// Turns a Supabase Storage error answer (JSON with error and message) into a RequestFailure.
import Foundation

/// Supabase's error answers: `{"statusCode": "403", "error": "Unauthorized", "message": "..."}`.
package enum SupabaseErrorResponse {
    /// The failure an error response stands for.
    package static func failure(_ response: HTTPResponse) -> RequestFailure {
        var code: String?
        var message: String?
        if let object = try? JSONSerialization.jsonObject(with: response.body) as? [String: Any] {
            code = object["error"] as? String
            message = (object["message"] as? String).map { String($0.prefix(500)) }
        } else if !response.body.isEmpty {
            message = String(response.text.prefix(200)).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        // 409 on the resumable endpoint means another upload holds the object's lock for now.
        let retryable = RequestFailure.isRetryable(status: response.status, code: code) || response.status == 409 && code != "Duplicate"
        return .server(status: response.status, code: code, message: message, retryable: retryable)
    }
}
