// A queued source as a producer wrote it (a path or an object URL), and the Job it becomes.
import Foundation
package import ImagePipe

/// Turns a queued source into a ``Job``, deciding the name that gives `{dir}` and `{stem}` in keys.
///
/// - An object URL (`s3://BUCKET/KEY`, `supabase://BUCKET/KEY`) goes by its key without the bucket:
///   `s3://uploads/2024/trip/a.jpg` gives `2024/trip/a.jpg`, and is read from object storage with the
///   worker's credentials for that kind of store. The key is taken as written (`.`, `..` and empty
///   segments too): the object read is the one it names, and an output key made from it that would
///   leave the destination fails the job with `invalid_key`.
/// - A local path goes by the rule of a file named to `imagepipe batch`: a relative path as given
///   (relative to the worker's working directory; `./` and doubled slashes dropped), an absolute one
///   (or one through `..`) by its file name alone. `file://` URLs are local paths.
///
/// The source text is stored as given, so a producer may queue a kind of source that an older worker
/// cannot read yet: that job fails as an unreadable source rather than being refused at the door.
package enum JobSource {
    /// The longest queued source accepted, 4096 bytes (a Linux path's limit; object keys stop at 1024).
    /// A claim reads no more of the row's text than that, so a producer's mistake (or a hostile
    /// upload name) cannot make a worker hold a source of any size; a longer one fails at once.
    package static let maxSourceBytes = 4096

    /// The most of a job's options a claim reads; options are a few short values, and longer text
    /// is cut and then fails to parse, failing the job.
    package static let maxOptionsBytes = 4096

    /// Why a claimed source cannot become a job, or nil when it can.
    package static func refusal(of source: String) -> ImagePipeError? {
        guard source.utf8.count > maxSourceBytes else { return nil }
        return ImagePipeError(.unreadableSource, "the queued source is longer than the \(maxSourceBytes) bytes a source may have")
    }

    /// The job for `source` at `attempt`, with its queued `options`.
    package static func job(for source: String, attempt: Int, options: QueuedJobOptions) -> Job {
        var job = job(for: source, attempt: attempt)
        job.focus = options.focus
        job.traceParent = options.traceparent
        return job
    }

    /// The job for `source` at `attempt`.
    package static func job(for source: String, attempt: Int) -> Job {
        // The one parser of sources; a source it refuses (an `https://` URL, an object URL without
        // its bucket) is kept as text, and fails as unreadable when it is read.
        switch try? SourceLocation(parsing: source) {
        case .object(let object)?:
            // An object in S3 or Supabase is read through the worker's source repositories.
            let key = object.location.key
            return Job(object: object, relativePath: key.isEmpty ? source : key, attempt: attempt)
        case .file(let path, _, _)?:
            // A file a producer named is read through a link like one named on the command line.
            return Job(path: path, relativePath: SourceScanner.relativePath(ofFile: path), attempt: attempt)
        case nil:
            let key = objectKey(of: source) ?? ""
            return Job(path: source, relativePath: key.isEmpty ? source : key, attempt: attempt)
        }
    }

    /// The key of an object URL (everything after the bucket), or nil for a local path.
    package static func objectKey(of source: String) -> String? {
        guard let scheme = source.range(of: "://"), !source.hasPrefix("file://") else { return nil }
        let rest = source[scheme.upperBound...]
        guard let slash = rest.firstIndex(of: "/") else { return "" }
        return String(rest[rest.index(after: slash)...])
    }
}
