// AWS Signature Version 4 in Swift: canonical request, string to sign, signing key and Authorization header.
public import Foundation
import ImagePipe
#if canImport(Glibc)
import Glibc
#endif

/// Signs requests with AWS Signature Version 4 (header-based, `AWS4-HMAC-SHA256`).
///
/// libcurl 7.88's own SigV4 support neither hashes the body nor encodes paths and queries the way
/// S3 checks them, so imagepipe signs here and hands libcurl finished headers. Paths and query
/// parameters are taken decoded and encoded by ``PercentEncoding``, the same encoder that builds
/// the URL on the wire, so what is signed is exactly what is sent.
public struct SigV4Signer: Sendable {
    /// How the path enters the canonical request.
    public enum PathRule: Sendable {
        /// S3: the path as it is, encoded once; `a//b` and `./` are part of a key and must stay.
        case s3
        /// Every other service: dot segments and repeated slashes removed first.
        case normalized
    }

    /// Where the session token of temporary credentials goes.
    public enum TokenPlacement: Sendable {
        /// Among the signed headers (S3 and most services).
        case signed
        /// Added after signing (services that want it outside the signature).
        case afterSigning
    }

    /// A request to sign: decoded path and query, headers as they will be sent.
    public struct Request: Sendable {
        /// The HTTP method.
        public var method: String
        /// The path, not percent-encoded, starting with `/`.
        public var path: String
        /// Query parameters, not percent-encoded.
        public var query: [(name: String, value: String)]
        /// The headers sent, `Host` included.
        public var headers: [(name: String, value: String)]
        /// Hex SHA-256 of the body (or `UNSIGNED-PAYLOAD`).
        public var payloadHash: String

        /// Creates a request to sign.
        public init(
            method: String, path: String, query: [(name: String, value: String)] = [],
            headers: [(name: String, value: String)], payloadHash: String
        ) {
            self.method = method
            self.path = path
            self.query = query
            self.headers = headers
            self.payloadHash = payloadHash
        }
    }

    /// The intermediate and final results of signing, so each step can be checked against AWS's vectors.
    public struct Signature: Sendable {
        /// The canonical request.
        public let canonicalRequest: String
        /// The string to sign.
        public let stringToSign: String
        /// The signed header names, `;`-separated.
        public let signedHeaders: String
        /// The hex signature.
        public let signature: String
        /// The Authorization header value.
        public let authorization: String
    }

    /// The credentials.
    public let credentials: AWSCredentials
    /// The region, e.g. `us-east-1`.
    public let region: String
    /// The service, `s3` for object storage.
    public let service: String
    /// How paths are canonicalised.
    public let pathRule: PathRule
    /// Where a session token goes.
    public let tokenPlacement: TokenPlacement

    /// Headers that proxies and libcurl may add or change on the way, so they are never signed.
    private static let unsignedHeaders: Set<String> = ["authorization", "user-agent", "expect", "connection", "x-amzn-trace-id"]

    /// Creates a signer.
    public init(
        credentials: AWSCredentials, region: String, service: String,
        pathRule: PathRule = .s3, tokenPlacement: TokenPlacement = .signed
    ) {
        self.credentials = credentials
        self.region = region
        self.service = service
        self.pathRule = pathRule
        self.tokenPlacement = tokenPlacement
    }

    /// Sets `X-Amz-Date` (and `X-Amz-Security-Token`) on the request, signs it and adds `Authorization`.
    @discardableResult
    public func sign(_ request: inout Request, at date: Date) -> Signature {
        let timestamp = Self.timestamp(date)
        Self.replaceHeader(&request.headers, "X-Amz-Date", timestamp)
        if let token = credentials.sessionToken, tokenPlacement == .signed {
            Self.replaceHeader(&request.headers, "X-Amz-Security-Token", token)
        }

        let (canonicalHeaders, signedHeaders) = Self.canonicalHeaders(request.headers)
        let canonicalRequest = [
            request.method,
            canonicalPath(request.path),
            Self.canonicalQuery(request.query),
            canonicalHeaders,
            signedHeaders,
            request.payloadHash,
        ].joined(separator: "\n")

        let day = String(timestamp.prefix(8))
        let scope = "\(day)/\(region)/\(service)/aws4_request"
        let stringToSign = [
            "AWS4-HMAC-SHA256", timestamp, scope, Digests.sha256(Array(canonicalRequest.utf8)).hexString,
        ].joined(separator: "\n")

        var key = Digests.hmacSHA256(key: Array("AWS4\(credentials.secretAccessKey)".utf8), day)
        for part in [region, service, "aws4_request"] {
            key = Digests.hmacSHA256(key: key, part)
        }
        let signature = Digests.hmacSHA256(key: key, stringToSign).hexString
        let authorization =
            "AWS4-HMAC-SHA256 Credential=\(credentials.accessKeyID)/\(scope), "
            + "SignedHeaders=\(signedHeaders), Signature=\(signature)"

        if let token = credentials.sessionToken, tokenPlacement == .afterSigning {
            Self.replaceHeader(&request.headers, "X-Amz-Security-Token", token)
        }
        request.headers.append(("Authorization", authorization))
        return Signature(
            canonicalRequest: canonicalRequest, stringToSign: stringToSign,
            signedHeaders: signedHeaders, signature: signature, authorization: authorization)
    }

    /// The canonical path: encoded once, after normalising for services other than S3.
    public func canonicalPath(_ path: String) -> String {
        switch pathRule {
        case .s3:
            return PercentEncoding.encodePath(path.isEmpty ? "/" : path)
        case .normalized:
            var segments: [Substring] = []
            for segment in path.split(separator: "/", omittingEmptySubsequences: true) {
                if segment == "." { continue }
                if segment == ".." {
                    _ = segments.popLast()
                    continue
                }
                segments.append(segment)
            }
            var normalized = "/" + segments.joined(separator: "/")
            if path.hasSuffix("/") && !segments.isEmpty { normalized += "/" }
            return PercentEncoding.encodePath(normalized)
        }
    }

    /// The canonical query string, which is also the query sent on the wire.
    public static func canonicalQuery(_ query: [(name: String, value: String)]) -> String {
        query.map { (PercentEncoding.encode($0.name), PercentEncoding.encode($0.value)) }
            .sorted { $0.0 != $1.0 ? $0.0 < $1.0 : $0.1 < $1.1 }
            .map { "\($0.0)=\($0.1)" }
            .joined(separator: "&")
    }

    /// Canonical header lines and the signed header list: names lowercased and sorted, repeated
    /// headers joined with commas in order, values trimmed with inner runs of spaces collapsed.
    static func canonicalHeaders(_ headers: [(name: String, value: String)]) -> (String, String) {
        var values: [String: [String]] = [:]
        for header in headers {
            let name = header.name.lowercased()
            guard !unsignedHeaders.contains(name) else { continue }
            values[name, default: []].append(normalizeValue(header.value))
        }
        let names = values.keys.sorted()
        let lines = names.map { "\($0):\(values[$0]!.joined(separator: ","))\n" }.joined()
        return (lines, names.joined(separator: ";"))
    }

    private static func normalizeValue(_ value: String) -> String {
        value.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }).joined(separator: " ")
    }

    private static func replaceHeader(_ headers: inout [(name: String, value: String)], _ name: String, _ value: String) {
        headers.removeAll { $0.name.caseInsensitiveCompare(name) == .orderedSame }
        headers.append((name, value))
    }

    /// `YYYYMMDDTHHMMSSZ` in UTC; gmtime_r rather than a DateFormatter, which is costly and not thread-safe everywhere.
    public static func timestamp(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(
            format: "%04d%02d%02dT%02d%02d%02dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
            Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec))
    }
}
