// The answer to an HTTPRequest: status, headers and body.
public import Foundation

/// A response from ``CurlHTTPClient``.
public struct HTTPResponse: Sendable {
    /// The HTTP status code.
    public var status: Int
    /// The headers of the final response (not of `100 Continue` or earlier hops).
    public var headers: [(name: String, value: String)]
    /// The body.
    public var body: Data

    /// Creates a response.
    public init(status: Int, headers: [(name: String, value: String)], body: Data) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The last value of a header, matched case-insensitively.
    public func header(_ name: String) -> String? {
        headers.last { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    /// The body as UTF-8 text.
    public var text: String { String(decoding: body, as: UTF8.self) }

    /// Whether the status is 2xx.
    public var isSuccess: Bool { (200..<300).contains(status) }
}
