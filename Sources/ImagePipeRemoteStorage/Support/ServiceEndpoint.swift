// An http(s) base URL split into the parts requests and signatures are built from.
import Foundation
public import ImagePipe

/// A service's base URL: scheme, host, port and an optional base path (Supabase's S3 endpoint has one).
public struct ServiceEndpoint: Sendable, Equatable, CustomStringConvertible {
    /// `http` or `https`.
    public let scheme: String
    /// The host name or address (IPv6 in brackets).
    public let host: String
    /// The port when the URL names one.
    public let port: Int?
    /// The path requests go under, decoded, without a trailing slash; empty for none.
    public let basePath: String

    /// Creates an endpoint from parts.
    public init(scheme: String, host: String, port: Int? = nil, basePath: String = "") {
        self.scheme = scheme
        self.host = host
        self.port = port
        self.basePath = basePath
    }

    /// Parses `text`; `what` names the setting in the error (e.g. `--endpoint`).
    public init(parsing text: String, what: String) throws(ImagePipeError) {
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = components.host, !host.isEmpty
        else {
            throw .configuration("\(what) must be an http:// or https:// URL with a host, not '\(text)'")
        }
        // Credentials in a URL would end up in logs and manifests.
        guard components.user == nil, components.password == nil else {
            throw .configuration("\(what) must not contain a user name or password")
        }
        guard components.query == nil, components.fragment == nil else {
            throw .configuration("\(what) must not have a query or fragment: '\(text)'")
        }
        var path = components.path
        while path.hasSuffix("/") { path.removeLast() }
        self.init(
            scheme: scheme, host: host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host,
            port: components.port, basePath: path)
    }

    /// `host[:port]`, as the Host header (the port only when it is not the scheme's default).
    public var authority: String {
        guard let port, port != (scheme == "https" ? 443 : 80) else { return host }
        return "\(host):\(port)"
    }

    /// `scheme://host[:port]`.
    public var origin: String { "\(scheme)://\(authority)" }

    /// The endpoint with another host (virtual-hosted buckets).
    public func withHost(_ host: String) -> ServiceEndpoint {
        ServiceEndpoint(scheme: scheme, host: host, port: port, basePath: basePath)
    }

    public var description: String { origin + PercentEncoding.encodePath(basePath) }
}
