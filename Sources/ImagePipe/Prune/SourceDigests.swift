// The SHA-256 of each source a prune asks about, by the name outputs record, each source read once.
import Foundation

/// The sources of a prune by the names their outputs record (``Job/sourceName``: a file's path
/// relative to its folder, an object's URL), hashed only when an output asks about them.
///
/// A prune usually reads only the originals whose outputs it has doubts about: an output whose
/// recorded name is among the sources needs that one source's hash; only an output whose name is
/// gone makes every source be read once, to find the same bytes under another name.
/// Not thread-safe: one prune asks from one thread, a Dispatch queue's (it reads files).
public final class SourceDigests {
    // Every source of each name: two folders given to one batch may each hold `IMG_0001.jpg`, and
    // names that differ only in their Unicode normalisation are one key of a Swift dictionary.
    private let jobs: [String: [Job]]
    // Names the scan found but could not take (a link whose target is gone: an unmounted disk).
    private let unavailable: [String: String]
    private let repositories: [String: any SourceRepository]
    private let maxSourceBytes: Int
    private var hashed: [String: Result<[String], ImagePipeError>] = [:]
    private var byDigest: [String: String]?

    /// Creates the index of `jobs` (a scan's), reading objects through `repositories` by scheme,
    /// refusing objects larger than `maxSourceBytes` as a batch would. `unavailable` are names the
    /// scan found and could not take, with why: an output of one is never judged orphaned.
    public init(
        jobs: [Job], unavailable: [String: String] = [:], repositories: [String: any SourceRepository], maxSourceBytes: Int
    ) {
        self.jobs = Dictionary(grouping: jobs, by: \.sourceName)
        self.unavailable = unavailable
        self.repositories = repositories
        self.maxSourceBytes = maxSourceBytes
    }

    /// The names among the sources that an output recording `recorded` may have been made from: the
    /// name itself, or, when the record was cut to fit object metadata (200 characters), every name
    /// it begins.
    public func names(matching recorded: String) -> [String] {
        if jobs[recorded] != nil || unavailable[recorded] != nil { return [recorded] }
        guard recorded.count == Origin.recordedSourceLimit else { return [] }
        return Set(jobs.keys).union(unavailable.keys).filter { $0.hasPrefix(recorded) }.sorted()
    }

    /// The SHA-256s (hex) of every source of this name, read and hashed on first use; the error
    /// names the source.
    public func sha256s(of name: String) -> Result<[String], ImagePipeError> {
        if let known = hashed[name] { return known }
        if let reason = unavailable[name] { return .failure(ImagePipeError(.unreadableSource, "\(name): \(reason)")) }
        guard let sources = jobs[name] else { return .failure(ImagePipeError(.sourceNotFound, "\(name) is not among the sources")) }
        let result = Result { () throws(ImagePipeError) in
            try sources.map { job throws(ImagePipeError) in try Self.hash(job, repositories: repositories, maxSourceBytes: maxSourceBytes) }
        }
        .mapError { $0.reason.contains(name) ? $0 : $0.prefixed(name) }
        hashed[name] = result
        return result
    }

    /// The name of a source with these bytes, reading every source not read yet (once); nil when
    /// none has them. Sources that cannot be read are listed in ``unreadable``.
    public func source(withSHA256 digest: String) -> String? {
        if byDigest == nil {
            var index: [String: String] = [:]
            for name in jobs.keys.sorted() {
                guard case .success(let digests) = sha256s(of: name) else { continue }
                for sha in digests where index[sha] == nil { index[sha] = name }
            }
            byDigest = index
        }
        return byDigest?[digest]
    }

    /// The sources read so far that could not be read, with why.
    public var unreadable: [ImagePipeError] {
        hashed.keys.sorted().compactMap { name in
            if case .failure(let error) = hashed[name] { return error }
            return nil
        }
    }

    /// Reads one source whole (a file in chunks) and hashes it.
    private static func hash(_ job: Job, repositories: [String: any SourceRepository], maxSourceBytes: Int) throws(ImagePipeError) -> String {
        guard let object = job.object else {
            // Large files are hashed in chunks and kept open, then closed as the result goes.
            return try SourceReader.read(job.sourcePath, followingLinks: job.followsLinks).sha256
        }
        guard let repository = repositories[object.location.scheme] else {
            throw ImagePipeError(.unreadableSource, "no \(object.location.scheme):// sources are read here")
        }
        if let bytes = object.bytes, bytes > maxSourceBytes {
            throw .sourceTooLarge(object.location.description, bytes: bytes, limit: maxSourceBytes)
        }
        return SHA256Digest.hash(try repository.read(object.location, maxBytes: maxSourceBytes).data).hex
    }
}
