// Finds the sources of a batch: folders (recursive; hidden files, the destination and the manifest left out; sorted), files and objects.
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Lists the files of a batch's inputs: folders, files, objects and folders in object storage
/// (see `SourceScanner+Objects.swift`), and the lines of a `--from` list.
///
/// Every regular file is listed whatever its name: what is an image is decided by its first bytes
/// when its job reads it (``ImageSignature``), the same way for every kind of source. Names only
/// leave out what is never a source: hidden files (`.name`, which also covers the temporary files
/// of a put), the destination and the manifest.
public struct SourceScanner: Sendable {
    /// One path the batch takes sources from: a folder or a file, local or in object storage.
    public struct Input: Sendable, Hashable {
        /// The path as given, relative to the current directory or absolute, or an `s3://` or
        /// `supabase://` URL.
        public var path: String
        /// Whether it came from a `--from` list rather than the command line. A listed path that does
        /// not exist fails as that one source (lists go stale); a missing argument stops the batch.
        public var listed: Bool

        /// Creates an input.
        public init(_ path: String, listed: Bool = false) {
            self.path = path
            self.listed = listed
        }
    }

    /// What a scan found.
    public struct Result: Sendable {
        /// The images, as jobs: in the order of the inputs, each folder's sorted by relative path.
        public var jobs: [Job]
        /// Entries left out, as `skipped` results saying why: a link to a directory (not followed),
        /// a dangling link, not a regular file.
        public var skipped: [JobResult]
        /// Directories that could not be listed, with the reason.
        public var unreadable: [(path: String, reason: String)]
        /// Hidden names left out of folders (see ``isHidden(_:)``), by the name they would have
        /// gone by: a file's or directory's path relative to its folder, an object's URL. Never
        /// read, but counted in the summary, so none is left out unsaid.
        public var hidden: [String] = []
        /// Folders given (local, or a folder URL) in which nothing was found, as given: an unmounted
        /// disk or a mistyped prefix looks like this, which matters to `imagepipe prune`.
        public var emptyFolders: [String] = []
    }

    /// The inputs, in the order given.
    public let inputs: [Input]
    /// Absolute directories not to descend into (e.g. a destination inside the source), absolute
    /// files not to list (the manifest being written), and folder URLs in object storage whose
    /// objects are left out.
    public let excluded: Set<String>
    /// What lists and looks up the inputs that are URLs, by scheme.
    public let sources: [String: any SourceRepository]

    /// Creates a scanner for the inputs, skipping the `excluded` directories, files (or folder URLs), with
    /// the repositories that list URL inputs.
    public init(inputs: [Input], excluding excluded: [String] = [], sources: [String: any SourceRepository] = [:]) {
        self.inputs = inputs
        self.excluded = Set(excluded.map { ObjectLocation.isURL($0) ? $0 : LocalPath.absolute($0) })
        self.sources = sources
    }

    /// Creates a scanner for one folder (or file).
    public init(root: String, excluding excluded: [String] = []) {
        self.init(inputs: [Input(root)], excluding: excluded)
    }

    /// Checks that every local input given on the command line exists, and that every URL is one,
    /// before anything is created or read. (URLs are looked up when they are scanned.)
    public func check() throws(ImagePipeError) {
        for input in inputs where !input.listed {
            guard let scheme = ObjectLocation.unsupportedScheme(of: input.path) else { continue }
            throw .configuration("source \(input.path): \(ObjectLocation.unsupportedReason(scheme))")
        }
        // The one parser of sources: an object URL without its bucket is refused by name.
        for input in inputs where ObjectLocation.isURL(input.path) {
            _ = try SourceLocation(parsing: input.path)
        }
        let missing = inputs.filter { !$0.listed && !ObjectLocation.isURL($0.path) && !FileManager.default.fileExists(atPath: $0.path) }
        guard missing.isEmpty else {
            throw .configuration(missing.map { "source \($0.path) does not exist" }.joined(separator: "; "))
        }
    }

    /// Lists every input. A folder gives its images relative to itself; a file goes by its path as
    /// given when that is relative and stays below the current directory, else by its name alone.
    /// A listed path that does not exist becomes a job, which fails when it is read.
    ///
    /// - Throws: `configuration` for an input that does not exist, and for a URL whose bucket cannot
    ///   be listed or read.
    public func scan() throws(ImagePipeError) -> Result {
        try check()
        var result = Result(jobs: [], skipped: [], unreadable: [])
        for input in inputs {
            if ObjectLocation.isURL(input.path) {
                try scanObjects(input, into: &result)
                continue
            }
            let path = LocalPath.absolute(input.path)
            var info = stat()
            guard stat(path, &info) == 0 else {
                // A listed URL of a kind no repository reads (`https://…`) keeps its text as its
                // path, so its job fails saying so rather than as a file that does not exist.
                let listedURL = ObjectLocation.unsupportedScheme(of: input.path) != nil
                result.jobs.append(
                    Job(path: listedURL ? input.path : path, relativePath: listedURL ? input.path : Self.relativePath(ofFile: input.path)))
                continue
            }
            switch info.st_mode & S_IFMT {
            case S_IFDIR:
                var found = Result(jobs: [], skipped: [], unreadable: [])
                walk(path, into: &found)
                result.jobs += found.jobs
                result.skipped += found.skipped
                result.unreadable += found.unreadable.map { (Self.joined(input.path, $0.path), $0.reason) }
                result.hidden += found.hidden
                if found.jobs.isEmpty { result.emptyFolders.append(input.path) }
            case S_IFREG:
                result.jobs.append(Job(path: path, relativePath: Self.relativePath(ofFile: input.path)))
            default:
                result.skipped.append(.skipped(Self.relativePath(ofFile: input.path), .notARegularFile, reason: Self.notRegular))
            }
        }
        return result
    }

    /// Walks one folder. Symbolic links to files are followed; links to directories are not, so a
    /// link cycle cannot make the walk endless: they are reported as skipped, like dangling links.
    /// Entries are listed by their raw names, so a name that is not valid UTF-8 is found too, under
    /// its escaped form.
    private func walk(_ root: String, into result: inout Result) {
        var stack: [(relative: String, path: RawPath)] = [("", RawPath(root))]
        while let (relativeDirectory, directory) = stack.popLast() {
            let entries: [DirectoryListing.Entry]
            do {
                entries = try DirectoryListing.entries(of: directory)
            } catch {
                result.unreadable.append((relativeDirectory, error.reason))
                continue
            }
            for entry in entries {
                let name = entry.escapedName
                let relative = relativeDirectory.isEmpty ? name : relativeDirectory + "/" + name
                if entry.isHidden {
                    result.hidden.append(relative)
                    continue
                }
                let rawPath = directory.appending(entry.name)
                let path = rawPath.escaped
                var mode = entry.type
                if mode == S_IFLNK {
                    let target = rawPath.fileType(followingLinks: true)
                    guard let target else {
                        result.skipped.append(
                            .skipped(
                                relative, .danglingLink,
                                reason: "dangling symbolic link: \(String(cString: strerror(errno)))"))
                        continue
                    }
                    guard target != S_IFDIR else {
                        result.skipped.append(.skipped(relative, .symlinkedDirectory, reason: "symbolic link to a directory, not followed"))
                        continue
                    }
                    mode = target
                }
                if mode == S_IFDIR {
                    if !excluded.contains(path) { stack.append((relative, rawPath)) }
                } else if mode == S_IFREG {
                    // The manifest may be written inside a source folder.
                    if excluded.contains(path) { continue }
                    result.jobs.append(
                        Job(path: path, relativePath: relative, rawPath: rawPath.isValidUTF8 ? nil : rawPath, followsLinks: true))
                } else {
                    result.skipped.append(.skipped(relative, .notARegularFile, reason: Self.notRegular))
                }
            }
        }
        result.jobs.sort { $0.relativePath < $1.relativePath }
        result.skipped.sort { $0.source < $1.source }
        result.hidden.sort()
    }

    /// Whether a name in a folder is hidden: one of its `/`-separated segments starts with `.`
    /// (`.DS_Store`, `.cache/a.jpg`, a put's `.name.tmp`), except the segments `.` and `..`
    /// themselves. In a file system those never appear in a listed name; in an object key they are
    /// ordinary characters naming an object of its own (`orig/./a.jpg` is not `orig/a.jpg`), which
    /// is listed and read like any other.
    public static func isHidden(_ relativePath: some StringProtocol) -> Bool {
        relativePath.split(separator: "/").contains { $0.hasPrefix(".") && $0 != "." && $0 != ".." }
    }

    /// The name a file given directly goes by in keys and manifests: its path as given when that is
    /// relative and stays below the current directory (`./` and repeated slashes dropped), so
    /// `trip/a.jpg` keeps `trip` as `{dir}`; otherwise (absolute, or through `..`) its name alone.
    public static func relativePath(ofFile path: String) -> String {
        let parts = path.split(separator: "/").filter { $0 != "." }
        // An absolute path with nothing to resolve: its last part, without Foundation's URL (which
        // asks the file system whether it is a directory: a queue worker does this for every job).
        if path.hasPrefix("/"), let name = parts.last, !parts.contains("..") { return String(name) }
        if path.hasPrefix("/") || parts.isEmpty || parts.contains("..") {
            return URL(fileURLWithPath: LocalPath.absolute(path)).lastPathComponent
        }
        return parts.joined(separator: "/")
    }

    private static let notRegular = "not a regular file (a FIFO, socket or device)"

    private static func joined(_ directory: String, _ relative: String) -> String {
        relative.isEmpty ? directory : directory + "/" + relative
    }
}
