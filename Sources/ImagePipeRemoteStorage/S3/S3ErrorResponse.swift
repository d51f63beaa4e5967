// Turns an S3 error answer (XML with Code and Message) into a RequestFailure.
import Foundation

/// S3's error answers: `<Error><Code>…</Code><Message>…</Message>…</Error>`.
package enum S3ErrorResponse {
    /// The failure an error response stands for. Only Code and Message are kept: S3 also echoes the
    /// string it signed and the access key, which have no place in a manifest.
    static func failure(_ response: HTTPResponse) -> RequestFailure {
        failure(status: response.status, body: response.text)
    }

    /// The failure for a status and XML body (which may be empty, as for HEAD).
    package static func failure(status: Int, body: String) -> RequestFailure {
        let code = XMLText.first("Code", in: body)
        let message = XMLText.first("Message", in: body).map { String($0.prefix(500)) }
        return .server(
            status: status, code: code, message: message,
            retryable: RequestFailure.isRetryable(status: status, code: code))
    }

    /// An error S3 reports inside a 200 answer (CompleteMultipartUpload does this), or nil.
    package static func embeddedError(_ response: HTTPResponse) -> RequestFailure? {
        let body = response.text
        guard body.contains("<Error>") else { return nil }
        // The status line said 200, so the code decides; an unknown code is treated like a 500.
        let code = XMLText.first("Code", in: body)
        let message = XMLText.first("Message", in: body)
        let retryable = code.map { RequestFailure.retryableCodes.contains($0) } ?? true
        return .server(status: response.status, code: code, message: message, retryable: retryable)
    }
}
