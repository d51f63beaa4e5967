// Turns --dest and its options into the storage repository that serves it.
import Foundation
import ImagePipe
import ImagePipeRemoteStorage
import Logging

/// Chooses and configures the storage repository for a destination.
enum StorageFactory {
    /// The repository named by `--dest`: a local directory (path or `file://`), an S3 bucket
    /// (`s3://`) or a Supabase Storage bucket (`supabase://`). Credentials come from the environment
    /// only, never from flags, so they cannot show up in `ps`, shell history or `--help`.
    static func make(_ options: StorageOptions,
                     environment: [String: String] = ProcessInfo.processInfo.environment) throws(ImagePipeError) -> any StorageRepository {
        let destination = options.dest
        let scheme = destination.range(of: "://").map { destination[..<$0.lowerBound].lowercased() }
        if scheme != "s3" {
            if options.endpoint != nil { throw .configuration("--endpoint applies only to s3:// destinations") }
            if options.region != nil { throw .configuration("--region applies only to s3:// destinations") }
        }
        if scheme != "s3" && scheme != "supabase" && options.publicBaseURL != nil {
            throw .configuration("--public-base-url applies only to s3:// and supabase:// destinations")
        }
        switch scheme {
        case "s3":
            let configuration = try S3Configuration.resolve(
                destination: destination, endpoint: options.endpoint, region: options.region,
                publicBaseURL: options.publicBaseURL, environment: environment)
            return S3Storage(configuration: configuration, logger: Logger(label: "imagepipe.s3"))
        case "supabase":
            let configuration = try SupabaseConfiguration.resolve(
                destination: destination, publicBaseURL: options.publicBaseURL, environment: environment)
            return SupabaseStorage(configuration: configuration, logger: Logger(label: "imagepipe.supabase"))
        case "file":
            guard let url = URL(string: destination), url.isFileURL, !url.path.isEmpty else {
                throw .configuration("invalid --dest URL '\(destination)'")
            }
            return LocalDirectoryStorage(root: url.path)
        case let scheme?:
            throw .configuration("unsupported --dest scheme '\(scheme)://'; use a directory path, file://, s3:// or supabase://")
        case nil:
            guard !destination.isEmpty else { throw .configuration("--dest is empty") }
            return LocalDirectoryStorage(root: destination)
        }
    }
}
