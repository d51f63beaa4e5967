// Listing every file under the local destination and removing files for `imagepipe prune`.
import Foundation
public import ImagePipe
#if canImport(Glibc)
import Glibc
#endif

extension LocalDirectoryStorage: PrunableStorage {
    /// Every entry under the root that is not a directory, by its path relative to the root: files,
    /// and links (never followed, so a link to a folder elsewhere is one foreign entry, not a tree).
    /// The page size means nothing to a directory.
    public func allKeys(pageSize: Int) throws(ImagePipeError) -> [String] {
        BlockingIO.mayBlock("list \(root)")
        var keys: [String] = []
        var stack: [(relative: String, path: RawPath)] = [("", RawPath(root))]
        while let (relative, directory) = stack.popLast() {
            let entries: [DirectoryListing.Entry]
            do {
                entries = try DirectoryListing.entries(of: directory)
            } catch {
                throw ImagePipeError(error.code, "cannot list \(relative.isEmpty ? root : root + "/" + relative): \(error.reason)")
            }
            for entry in entries {
                let name = entry.escapedName
                // A put's temporary file (or a probe's): never an output under its final name.
                if name.hasPrefix(TemporarySweeper.prefix) { continue }
                let key = relative.isEmpty ? name : relative + "/" + name
                if entry.isDirectory {
                    stack.append((key, directory.appending(entry.name)))
                } else {
                    keys.append(key)
                }
            }
        }
        return keys.sorted()
    }

    /// A directory removes one file a call.
    public var removesSeveralAtOnce: Bool { false }

    /// One `unlink` a key (and the directories it leaves empty, as ``delete(_:)`` does).
    public func delete(_ keys: [String], batchSize: Int) throws(ImagePipeError) -> [KeyFailure] {
        BlockingIO.mayBlock("remove files under \(root)")
        return deleteOneByOne(keys)
    }
}
