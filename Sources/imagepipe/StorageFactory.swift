// Turns --dest and its options into the storage repository that serves it, and source URLs into the repositories that read them.
import Foundation
import ImagePipe
import ImagePipeLocalStorage
import ImagePipeRemoteStorage
import Logging

/// Chooses and configures the storage repository for a destination, and those that read sources:
/// every command gets its stores here, each picked by ``StoreKind``.
enum StorageFactory {
    /// The repository named by `--dest`: a local directory (path or `file://`), an S3 bucket
    /// (`s3://`) or a Supabase Storage bucket (`supabase://`). Credentials come from the environment
    /// only, never from flags, so they cannot show up in `ps`, shell history or `--help`.
    /// `--endpoint` and `--region` apply to an `s3://` destination and to `s3://` sources among `sourceURLs`.
    static func make(
        _ options: StorageOptions, sourceURLs: [String] = [],
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(ImagePipeError) -> any StorageRepository {
        try make(
            destination: options.dest, options.endpoints, publicBaseURL: options.publicBaseURL, sourceURLs: sourceURLs,
            environment: environment)
    }

    /// The repository for `destination`, as ``make(_:sourceURLs:environment:)`` chooses it, for
    /// commands that name their destination otherwise than with `--dest` (prune).
    static func make(
        destination: String, _ options: EndpointOptions, publicBaseURL: String? = nil, sourceURLs: [String] = [],
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(ImagePipeError) -> any StorageRepository {
        // The flags are checked before the destination itself, so a flag that does not apply is
        // named even when the destination is wrong too.
        let kind = Result { () throws(ImagePipeError) in try StoreKind(destination: destination) }
        let parsed = try? kind.get()
        if parsed != .s3, !sourceURLs.contains(where: { $0.lowercased().hasPrefix("s3://") }) {
            if options.endpoint != nil { throw .configuration("--endpoint applies only to s3:// destinations and sources") }
            if options.region != nil { throw .configuration("--region applies only to s3:// destinations and sources") }
        }
        switch try kind.get() {
        case .s3:
            let configuration = try S3Configuration.resolve(
                destination: destination, endpoint: options.endpoint, region: options.region,
                publicBaseURL: publicBaseURL, environment: environment)
            return S3Storage(configuration: configuration, logger: Logger(label: "imagepipe.s3"))
        case .supabase:
            let configuration = try SupabaseConfiguration.resolve(
                destination: destination, publicBaseURL: publicBaseURL, environment: environment)
            return SupabaseStorage(configuration: configuration, logger: Logger(label: "imagepipe.supabase"))
        case .localDirectory(let root):
            // A folder a web server or CDN serves: its URLs are built as a bucket's are.
            if let publicBaseURL { try RemoteDestination.validatePublicBaseURL(publicBaseURL) }
            return LocalDirectoryStorage(root: root, publicBaseURL: publicBaseURL)
        }
    }

    /// One placeholder URL per kind of object store the environment has credentials for, so a
    /// worker whose jobs name objects can read them: `s3://` with AWS credentials, `supabase://`
    /// with SUPABASE_URL and a key.
    static func configuredSourceSchemes(
        _ options: StorageOptions,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> [String] {
        var urls: [String] = []
        if (try? S3Configuration.resolve(
            destination: "s3://any", endpoint: options.endpoint, region: options.region,
            publicBaseURL: nil, environment: environment)) != nil
        {
            urls.append("s3://any")
        }
        if (try? SupabaseConfiguration.resolve(destination: "supabase://any", publicBaseURL: nil, environment: environment)) != nil {
            urls.append("supabase://any")
        }
        return urls
    }

    /// One repository per scheme among `urls` (`s3://` or `supabase://` sources), resolved like a
    /// destination of that scheme: the same flags, environment and files, so sources and
    /// destination in one store share everything but the bucket.
    static func sources(
        _ urls: [String], _ options: StorageOptions,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(ImagePipeError) -> [any SourceRepository] {
        try sources(urls, options.endpoints, environment: environment)
    }

    /// The repositories that read `urls`, as above, with `--endpoint` and `--region` alone.
    static func sources(
        _ urls: [String], _ options: EndpointOptions,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(ImagePipeError) -> [any SourceRepository] {
        var repositories: [any SourceRepository] = []
        var seen: Set<String> = []
        for url in urls {
            let location = try ObjectLocation(parsing: url)
            guard seen.insert(location.scheme).inserted else { continue }
            // Resolved for the bucket alone: a source's key need not follow the rules of a destination prefix.
            let bucket = "\(location.scheme)://\(location.bucket)"
            switch try StoreKind(destination: bucket) {
            case .s3:
                let configuration = try S3Configuration.resolve(
                    destination: bucket, endpoint: options.endpoint, region: options.region,
                    publicBaseURL: nil, environment: environment)
                repositories.append(S3SourceRepository(configuration: configuration, logger: Logger(label: "imagepipe.s3")))
            case .supabase:
                let configuration = try SupabaseConfiguration.resolve(destination: bucket, publicBaseURL: nil, environment: environment)
                repositories.append(SupabaseSourceRepository(configuration: configuration, logger: Logger(label: "imagepipe.supabase")))
            case .localDirectory:
                // ObjectLocation takes object-store URLs only; a store added to StoreKind lands here
                // until it can be read from.
                throw .configuration("'\(url)' cannot be read as a source: sources are \(ObjectLocation.supportedSources)")
            }
        }
        return repositories
    }
}

/// The kind of store a destination names: the one place a destination's scheme is read, so adding
/// a store is a case here and in the switches over it (which the compiler then asks for).
enum StoreKind: Equatable {
    /// A directory path or a `file://` URL: the directory's path.
    case localDirectory(String)
    /// `s3://BUCKET/PREFIX`.
    case s3
    /// `supabase://BUCKET/PREFIX`.
    case supabase

    /// The kind `destination` names; anything else is an error naming it, never a guess.
    init(destination: String) throws(ImagePipeError) {
        guard let separator = destination.range(of: "://") else {
            guard !destination.isEmpty else { throw .configuration("--dest is empty") }
            self = .localDirectory(destination)
            return
        }
        switch destination[..<separator.lowerBound].lowercased() {
        case "s3": self = .s3
        case "supabase": self = .supabase
        case "file":
            guard let url = URL(string: destination), url.isFileURL, !url.path.isEmpty else {
                throw .configuration("invalid --dest URL '\(destination)'")
            }
            self = .localDirectory(url.path)
        case let scheme:
            throw .configuration(
                "unsupported --dest scheme '\(scheme)://' in '\(destination)'; use a directory path, file://, s3:// or supabase://")
        }
    }

    /// Whether objects go over HTTP to a service (and a destination is known good only once it answered).
    var isRemote: Bool {
        switch self {
        case .localDirectory: false
        case .s3, .supabase: true
        }
    }
}
