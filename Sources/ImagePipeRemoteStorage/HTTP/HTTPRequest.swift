// One HTTP request as the remote stores build it: method, URL, headers and a body held in memory.
public import Foundation

/// A request for ``CurlHTTPClient``.
public struct HTTPRequest: Sendable {
    /// `GET`, `PUT`, `POST`, `HEAD`, `DELETE`, `PATCH`.
    public var method: String
    /// The absolute URL, already percent-encoded.
    public var url: String
    /// Headers in the order they are sent. A `Host` header here replaces the one libcurl derives.
    public var headers: [(name: String, value: String)]
    /// The body; empty for none. It is sent straight from this buffer, never copied.
    public var body: Data
    /// The longest answer body accepted; nil for the client's ``CurlHTTPClient/Configuration/maxResponseBytes``.
    /// An answer declaring more (Content-Length) is abandoned before its body is read.
    public var maxResponseBytes: Int?

    /// Creates a request.
    public init(
        method: String, url: String, headers: [(name: String, value: String)] = [], body: Data = Data(),
        maxResponseBytes: Int? = nil
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.maxResponseBytes = maxResponseBytes
    }

    /// The last value of a header, matched case-insensitively.
    public func header(_ name: String) -> String? {
        headers.last { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }
}
