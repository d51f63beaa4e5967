// Turns --dest and its options into the storage repository that serves it.
import Foundation
import ImagePipe

/// Chooses and configures the storage repository for a destination.
enum StorageFactory {
    /// The repository named by `--dest`: a local directory (path or `file://`).
    static func make(_ options: StorageOptions) throws(ImagePipeError) -> any StorageRepository {
        let destination = options.dest
        if let colon = destination.range(of: "://") {
            let scheme = destination[..<colon.lowerBound].lowercased()
            switch scheme {
            case "file":
                guard let url = URL(string: destination), url.isFileURL, !url.path.isEmpty else {
                    throw .configuration("invalid --dest URL '\(destination)'")
                }
                return try LocalDirectoryStorage(root: url.path)
            default:
                throw .configuration("unsupported --dest scheme '\(scheme)://'; use a directory path or file://")
            }
        }
        guard !destination.isEmpty else { throw .configuration("--dest is empty") }
        return try LocalDirectoryStorage(root: destination)
    }
}
