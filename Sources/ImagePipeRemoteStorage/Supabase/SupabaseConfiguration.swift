// Everything SupabaseStorage needs: project URL, service key, bucket, prefix and limits.
import Foundation
public import ImagePipe

/// The settings of a Supabase Storage destination.
///
/// The key is kept out of `description` and reflection, so printing a configuration cannot leak it.
public struct SupabaseConfiguration: Sendable, CustomStringConvertible, CustomReflectable {
    /// The project URL (`SUPABASE_URL`).
    public var projectURL: ServiceEndpoint
    /// The service role key (or another key allowed to write the bucket).
    public var key: String
    /// Where objects go.
    public var destination: RemoteDestination
    /// The base of the URLs recorded for stored objects; nil for Supabase's public object URLs.
    public var publicBaseURL: String?
    /// Objects larger than this go through the resumable (TUS) endpoint, as Supabase recommends above 6 MB.
    public var resumableThreshold: Int
    /// The size of each resumable chunk; Supabase only accepts 6 MiB chunks (the last may be shorter).
    public var chunkSize: Int
    /// Entries asked for per page when a source folder is listed.
    public var listPageSize: Int
    /// Retries.
    public var retry: RetryPolicy
    /// Timeouts.
    public var http: CurlHTTPClient.Configuration
    /// The most objects and folders one listing holds (``ListingBound``).
    public var maxListedEntries = ListingBound.defaultMaxEntries

    /// Creates a configuration.
    public init(
        projectURL: ServiceEndpoint, key: String, destination: RemoteDestination, publicBaseURL: String? = nil,
        resumableThreshold: Int = 6 << 20, chunkSize: Int = 6 << 20, listPageSize: Int = 1000,
        retry: RetryPolicy = .standard, http: CurlHTTPClient.Configuration = .init()
    ) {
        self.projectURL = projectURL
        self.key = key
        self.destination = destination
        self.publicBaseURL = publicBaseURL
        self.resumableThreshold = resumableThreshold
        self.chunkSize = max(1, chunkSize)
        self.listPageSize = max(1, listPageSize)
        self.retry = retry
        self.http = http
    }

    /// The configuration for `--dest supabase://BUCKET/PREFIX`, from `SUPABASE_URL` and
    /// `SUPABASE_SERVICE_ROLE_KEY` (or `SUPABASE_KEY`).
    public static func resolve(
        destination: String, publicBaseURL: String?,
        environment: [String: String]
    ) throws(ImagePipeError) -> SupabaseConfiguration {
        let target = try RemoteDestination(parsing: destination, scheme: "supabase")
        guard let urlText = environment["SUPABASE_URL"], !urlText.isEmpty else {
            throw .configuration(
                "SUPABASE_URL is not set: \(destination) needs the Supabase project's URL in the environment variable "
                    + "SUPABASE_URL (e.g. https://PROJECT.supabase.co); \(Self.fromTheEnvironmentOnly)")
        }
        let projectURL = try ServiceEndpoint(parsing: urlText, what: "SUPABASE_URL")
        guard
            let key = [environment["SUPABASE_SERVICE_ROLE_KEY"], environment["SUPABASE_KEY"]]
                .compactMap({ $0 }).first(where: { !$0.isEmpty })
        else {
            throw .configuration(
                "no Supabase key for \(destination): set the environment variable SUPABASE_SERVICE_ROLE_KEY (or SUPABASE_KEY) "
                    + "to the project's service-role key; \(Self.fromTheEnvironmentOnly)")
        }
        if let publicBaseURL { try RemoteDestination.validatePublicBaseURL(publicBaseURL) }
        return SupabaseConfiguration(projectURL: projectURL, key: key, destination: target, publicBaseURL: publicBaseURL)
    }

    /// Said with a missing setting: a user who put it in the configuration file learns why it was not found.
    static let fromTheEnvironmentOnly = "Supabase settings are read from the environment only, never from a --config file"

    /// The URL recorded for a stored object (`key` includes the prefix).
    public func objectURL(forKey key: String) -> String {
        if let publicBaseURL { return RemoteDestination.publicURL(base: publicBaseURL, key: key) }
        return projectURL.origin + PercentEncoding.encodePath("\(projectURL.basePath)/storage/v1/object/public/\(destination.bucket)/\(key)")
    }

    public var description: String {
        "SupabaseConfiguration(\(projectURL), bucket: \(destination.bucket), prefix: \(destination.prefix), key: <redacted>)"
    }

    public var customMirror: Mirror {
        Mirror(self, children: ["projectURL": projectURL, "destination": destination, "key": "<redacted>"], displayStyle: .struct)
    }
}
