// Finds the images of a batch: recursive, hidden files skipped, sorted, the destination left out.
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Lists the image files under a directory.
public struct SourceScanner: Sendable {
    /// File extensions treated as images (lowercase, without the dot). Other files are counted as skipped.
    public static let imageExtensions: Set<String> = [
        "jpg", "jpeg", "jpe", "jfif", "png", "webp", "tif", "tiff", "gif", "heic", "heif", "hif", "avif",
    ]

    /// What a scan found.
    public struct Result: Sendable {
        /// The images, as jobs, sorted by relative path.
        public var jobs: [Job]
        /// Relative paths of files left out because their extension is not an image's.
        public var skipped: [String]
        /// Directories that could not be listed, with the reason.
        public var unreadable: [(path: String, reason: String)]
    }

    /// The absolute root directory.
    public let root: String
    /// Absolute directories not to descend into (e.g. a destination inside the source).
    public let excluded: Set<String>

    /// Creates a scanner for `root`, skipping the `excluded` directories.
    public init(root: String, excluding excluded: [String] = []) {
        self.root = FilePath.absolute(root)
        self.excluded = Set(excluded.map(FilePath.absolute))
    }

    /// Walks the tree. Symbolic links to files are followed (the folder is the user's own); links to
    /// directories are not, so a link cycle cannot make the walk endless.
    public func scan() throws(ImagePipeError) -> Result {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: root, isDirectory: &isDirectory) else {
            throw .configuration("source directory \(root) does not exist")
        }
        guard isDirectory.boolValue else { throw .configuration("source \(root) is not a directory") }

        var result = Result(jobs: [], skipped: [], unreadable: [])
        // Listed by raw names, so a name that is not valid UTF-8 is found too, under its escaped form.
        var stack: [(relative: String, path: RawPath)] = [("", RawPath(root))]
        while let (relativeDirectory, directory) = stack.popLast() {
            let entries: [DirectoryListing.Entry]
            do {
                entries = try DirectoryListing.entries(of: directory)
            } catch {
                result.unreadable.append((relativeDirectory, error.reason))
                continue
            }
            for entry in entries where !entry.isHidden {
                let name = entry.escapedName
                let relative = relativeDirectory.isEmpty ? name : relativeDirectory + "/" + name
                let rawPath = directory.appending(entry.name)
                let path = rawPath.escaped
                var mode = entry.type
                if mode == S_IFLNK {
                    guard rawPath.fileType(followingLinks: true) == S_IFREG else { continue }
                    mode = S_IFREG
                }
                if mode == S_IFDIR {
                    if !excluded.contains(path) { stack.append((relative, rawPath)) }
                } else if mode == S_IFREG {
                    let ext = name.lastIndex(of: ".").map { String(name[name.index(after: $0)...]).lowercased() } ?? ""
                    if Self.imageExtensions.contains(ext) {
                        result.jobs.append(Job(path: path, relativePath: relative, rawPath: rawPath.isValidUTF8 ? nil : rawPath,
                                               followsLinks: true))
                    } else {
                        result.skipped.append(relative)
                    }
                }
            }
        }
        result.jobs.sort { $0.relativePath < $1.relativePath }
        result.skipped.sort()
        return result
    }
}
