// A transfer that got no complete HTTP answer: libcurl's error code, sorted into worth-retrying or not.
import CCurlShim
import CLibCurl

/// libcurl could not complete a transfer (connect failure, reset, stall, TLS problem).
public struct TransportError: Error, Sendable, CustomStringConvertible {
    /// libcurl's `CURLcode`.
    public let code: Int
    /// libcurl's explanation, with the detail from its error buffer when there is one.
    public let message: String
    /// For an answer refused as too large (``isTooLarge``): the length it declared, or nil when it
    /// declared none and only turned out too long while being read.
    public let declaredLength: Int?

    /// Creates an error from a libcurl code and message.
    public init(code: Int, message: String, declaredLength: Int? = nil) {
        self.code = code
        self.message = message
        self.declaredLength = declaredLength
    }

    /// An answer longer than the request accepts, abandoned before (or while) its body was read.
    static func tooLarge(declaredLength: Int?, limit: Int) -> TransportError {
        TransportError(
            code: Int(CURLE_FILESIZE_EXCEEDED.rawValue),
            message: "the answer is longer than the \(limit) bytes accepted", declaredLength: declaredLength)
    }

    /// Whether the answer was abandoned for being longer than the request accepts; not worth retrying.
    public var isTooLarge: Bool { code == Int(CURLE_FILESIZE_EXCEEDED.rawValue) }

    /// Whether the transfer timed out (connect timeout or a stalled transfer); such retries cost more quota.
    public var isTimeout: Bool { code == Int(CURLE_OPERATION_TIMEDOUT.rawValue) }

    /// Whether another attempt may succeed: network trouble, not a malformed URL or a bad certificate.
    public var isRetryable: Bool {
        Self.retryableCodes.contains(code)
    }

    public var description: String { message }

    private static let retryableCodes: Set<Int> = Set(
        [
            CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_CONNECT, CURLE_WEIRD_SERVER_REPLY, CURLE_HTTP2,
            CURLE_PARTIAL_FILE, CURLE_OPERATION_TIMEDOUT, CURLE_SSL_CONNECT_ERROR, CURLE_GOT_NOTHING,
            CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_HTTP2_STREAM, CURLE_AGAIN, CURLE_HTTP3, CURLE_QUIC_CONNECT_ERROR,
        ].map { Int($0.rawValue) })
}
