// Requests to one Supabase project's Storage API and their retries: the plumbing SupabaseStorage and SupabaseSourceRepository share.
import Foundation
import ImagePipe
import Logging

/// Sends authenticated requests to a project's Storage API over pooled libcurl handles and retries
/// them in the standard mode, for any bucket.
final class SupabaseClient: Sendable {
    /// The project URL (`SUPABASE_URL`).
    let projectURL: ServiceEndpoint
    private let key: String
    let http: CurlHTTPClient
    let retrier: Retrier
    let logger: Logger

    init(configuration: SupabaseConfiguration, logger: Logger, quota: RetryQuota) {
        projectURL = configuration.projectURL
        key = configuration.key
        self.logger = logger
        http = CurlHTTPClient(configuration: configuration.http)
        retrier = Retrier(policy: configuration.retry, quota: quota, service: "supabase", logger: logger)
    }

    /// `Authorization: Bearer` and `apikey`, both carrying the key, as Supabase's gateway wants.
    var authorizationHeaders: [(name: String, value: String)] {
        [("Authorization", "Bearer \(key)"), ("apikey", key)]
    }

    /// The URL of an API path such as `/storage/v1/object/BUCKET/KEY` (not encoded), under the project's base path.
    func url(_ path: String) -> String {
        projectURL.origin + PercentEncoding.encodePath(projectURL.basePath + path)
    }

    /// Sends one request; any non-2xx answer becomes a ``RequestFailure``.
    func send(_ request: HTTPRequest) throws(RequestFailure) -> HTTPResponse {
        let started = ContinuousClock.now
        let response: HTTPResponse
        do {
            response = try http.perform(request)
        } catch {
            RequestMetrics.request(service: "supabase", method: request.method, status: nil)
            throw .transport(error)
        }
        RequestMetrics.request(service: "supabase", method: request.method, status: response.status)
        logger.trace(
            "request answered",
            metadata: [
                "method": "\(request.method)", "url": "\(request.url)", "status": .stringConvertible(response.status),
                "duration_ms": .stringConvertible(Int((ContinuousClock.now - started).milliseconds.rounded())),
            ])
        guard response.isSuccess else { throw SupabaseErrorResponse.failure(response) }
        return response
    }

    /// `GET /storage/v1/object/info/authenticated/BUCKET/KEY`, retried: the object's size, ETag and
    /// user metadata as JSON, or nil when there is no such object.
    func objectInfo(bucket: String, key: String) throws(RetryExhausted) -> [String: Any]? {
        let request = HTTPRequest(
            method: "GET", url: url("/storage/v1/object/info/authenticated/\(bucket)/\(key)"),
            headers: authorizationHeaders)
        let response = try retrier.run("info supabase://\(bucket)/\(key)") { (_) throws(RequestFailure) -> HTTPResponse? in
            do throws(RequestFailure) {
                return try send(request)
            } catch {
                if Self.isNotFound(error) { return nil }
                throw error
            }
        }
        return response.map { SupabaseStorage.objectInfo($0.body) }
    }

    /// `GET /storage/v1/bucket/BUCKET`: a missing bucket, a refused key or an unreachable project
    /// is a configuration error naming the bucket.
    func checkBucket(_ bucket: String) throws(ImagePipeError) {
        let name = "supabase://\(bucket)"
        let request = HTTPRequest(method: "GET", url: url("/storage/v1/bucket/\(bucket)"), headers: authorizationHeaders)
        do {
            _ = try retrier.run("GET \(name)") { (_) throws(RequestFailure) in try send(request) }
        } catch {
            if Self.isNotFound(error.failure) {
                throw .configuration("bucket \(name) does not exist in \(projectURL.origin)")
            }
            if case .server(let status, _, _, _) = error.failure, status == 401 || status == 403 {
                throw .configuration("access to bucket \(name) is denied (\(error.failure)): check SUPABASE_SERVICE_ROLE_KEY")
            }
            throw .configuration("cannot reach bucket \(name) at \(projectURL.origin): \(error.failure)")
        }
    }

    /// Supabase reports missing objects and buckets as 404, or as 400 with `"statusCode": "404"` / `not_found`.
    static func isNotFound(_ failure: RequestFailure) -> Bool {
        guard case .server(let status, let code, let message, _) = failure else { return false }
        return status == 404 || code == "not_found" || (status == 400 && (message ?? "").lowercased().contains("not found"))
    }
}
