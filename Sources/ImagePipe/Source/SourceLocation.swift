// Where an original is, one value: a local file or an object in a store; the one parser of a source as text.
import Foundation

/// Where a job's original is. A job holds one (``Job/source``), and one place reads it
/// (``FileHandler``'s `readSource`): a new kind of source (Google Cloud Storage, say) is a case here,
/// its reader there, and its contract tests.
public enum SourceLocation: Sendable, Hashable {
    /// A local file: its path (escaped where a name is not UTF-8), the bytes opened when it is
    /// (``RawPath``), and whether a symbolic link there is read through: yes in a batch over the
    /// user's own folder, no for a queue directory's deliveries, where a link could publish any file
    /// the worker can read.
    case file(path: String, raw: RawPath? = nil, followsLinks: Bool = true)
    /// An object in S3 or Supabase, with its size and ETag when it was listed.
    case object(ListedObject)

    /// The source `text` names, for the command line, a queue's rows and its options files alike:
    /// `s3://BUCKET/KEY` and `supabase://BUCKET/KEY` an object, `file://PATH` and any other text
    /// without a scheme a local file (read through links).
    ///
    /// - Throws: `configuration` for a URL of a scheme sources cannot be read from (`https://…`),
    ///   naming it, and for an object URL without a bucket.
    public init(parsing text: String) throws(ImagePipeError) {
        if text.hasPrefix("file://") {
            self = .file(path: URL(string: text)?.path ?? String(text.dropFirst(7)))
        } else if ObjectLocation.isURL(text) {
            self = .object(ListedObject(location: try ObjectLocation(parsing: text)))
        } else if let scheme = ObjectLocation.unsupportedScheme(of: text) {
            throw .configuration("source \(text): \(ObjectLocation.unsupportedReason(scheme))")
        } else {
            self = .file(path: text)
        }
    }

    /// As written in results and logs: a file's path, an object's URL.
    public var description: String {
        switch self {
        case .file(let path, _, _): path
        case .object(let object): object.location.description
        }
    }
}
