// Why one attempt at a request failed, and whether another attempt may succeed.
import Foundation
import ImagePipe

/// The failure of a single HTTP attempt: no answer, an error answer, or an answer that fails its checksum.
public enum RequestFailure: Error, Sendable, CustomStringConvertible {
    /// libcurl got no complete answer.
    case transport(TransportError)
    /// The server answered with an error. `code` and `message` come from its body when it had one.
    case server(status: Int, code: String?, message: String?, retryable: Bool)
    /// The server's answer shows the bytes it stored are not the bytes sent (its ETag is another MD5).
    case integrity(String)

    /// Whether the AWS SDKs' standard retry mode would try again.
    public var isRetryable: Bool {
        switch self {
        case .transport(let error): error.isRetryable
        case .server(_, _, _, let retryable): retryable
        case .integrity: true
        }
    }

    /// Timeouts cost more retry quota than other failures.
    public var isTimeout: Bool {
        if case .transport(let error) = self { return error.isTimeout }
        return false
    }

    /// `Code (status): message`, e.g. `SignatureDoesNotMatch (403): The request signature ...`.
    public var description: String {
        switch self {
        case .transport(let error):
            return "connection failed: \(error.message)"
        case .server(let status, let code, let message, _):
            var text = code.map { "\($0) (\(status))" } ?? "HTTP \(status)"
            if let message, !message.isEmpty { text += ": \(message)" }
            return text
        case .integrity(let detail):
            return "checksum mismatch: \(detail)"
        }
    }

    /// The ImagePipeError a storage reports once its retries are over.
    func imagePipeError(_ context: String, attempts: Int) -> ImagePipeError {
        if isRetryable { return ImagePipeError(.storageUnavailable, exhausted(context, attempts: attempts)) }
        return ImagePipeError(.storageRejected, "\(context): \(description)")
    }

    /// `context: description (gave up after N attempts)`, the reason of a retryable failure whose retries ran out.
    func exhausted(_ context: String, attempts: Int) -> String {
        "\(context): \(description) (gave up after \(attempts == 1 ? "1 attempt" : "\(attempts) attempts"))"
    }

    /// The standard-mode rule for HTTP errors: throttling, server errors and S3's transient codes.
    static func isRetryable(status: Int, code: String?) -> Bool {
        if let code, retryableCodes.contains(code) { return true }
        return status == 429 || status == 500 || status == 502 || status == 503 || status == 504
    }

    /// Error codes the AWS SDKs retry (throttling and transient), plus S3's checksum failures: the
    /// bytes imagepipe holds are intact, so a corruption on the way is worth one more send.
    static let retryableCodes: Set<String> = [
        "Throttling", "ThrottlingException", "ThrottledException", "RequestThrottledException",
        "TooManyRequestsException", "ProvisionedThroughputExceededException", "TransactionInProgressException",
        "RequestLimitExceeded", "BandwidthLimitExceeded", "LimitExceededException", "RequestThrottled",
        "SlowDown", "PriorRequestNotComplete", "EC2ThrottledException", "RequestTimeout", "RequestTimeoutException",
        "InternalError", "ServiceUnavailable", "BadDigest", "XAmzContentSHA256Mismatch",
    ]
}
