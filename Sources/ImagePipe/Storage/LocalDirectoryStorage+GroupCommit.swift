// One round of the local directory's group commit: the files' data, then their names, made durable together.
import CFileSystem
import Foundation
#if canImport(Glibc)
import Glibc
#endif

extension LocalDirectoryStorage {
    /// A put's temporary file, written and marked, its descriptor still open for the fsync.
    struct WrittenFile: Sendable {
        var fd: Int32
        var temporary: String
        /// Where it goes.
        var path: String
        var directory: String
        /// When the put made `directory`: the directories above it up to the root, whose entries
        /// for the new directories must be made durable too.
        var parentsMade: [String]
        /// The object, without its bytes.
        var object: StorageObject
        var bytes: Int
    }

    /// Makes every file durable, moves each into place and makes the names durable, with those of
    /// new directories (`parents`: every directory in which a put has made or is making one, not
    /// only this round's: a file may land in a directory another put made and has not yet
    /// committed); one outcome per file, in order.
    ///
    /// Each file is on disk before its name is (a crash never leaves a short file under a final
    /// name), and a put succeeds only once its name is on disk too. Writeback of every file starts
    /// before the first fsync waits, so on a journalling file system the first fsync's commit
    /// carries the others' blocks and the rest return at once; a directory holding several of the
    /// round's files is fsynced once.
    static func commit(_ files: [WrittenFile], parents: Set<String>) -> [Result<StoredObject, ImagePipeError>] {
        for file in files { _ = ifs_start_writeback(file.fd) }
        var outcomes = files.map { file -> Result<StoredObject, ImagePipeError> in
            let synced = fsync(file.fd) == 0 ? nil : errno
            let closed = close(file.fd) == 0 ? nil : errno
            if let code = synced ?? closed {
                unlink(file.temporary)
                return .failure(Self.failure(code, synced != nil ? "cannot fsync \(file.path)" : "cannot close \(file.path)"))
            }
            do throws(ImagePipeError) {
                return .success(try place(file))
            } catch {
                unlink(file.temporary)
                return .failure(error)
            }
        }
        // Directories whose entries changed: those the files moved into, and those new directories were made in.
        var directories: [String: [Int]] = [:]
        for (index, file) in files.enumerated() {
            guard case .success(let stored) = outcomes[index], !stored.wasInPlace else { continue }
            directories[file.directory, default: []].append(index)
            for parent in parents where file.directory.hasPrefix(parent + "/") { directories[parent, default: []].append(index) }
        }
        for parent in parents where directories[parent] == nil { directories[parent] = [] }
        for (directory, indices) in directories {
            guard let code = syncDirectory(directory) else { continue }
            for index in indices {
                outcomes[index] = .failure(Self.failure(code, "cannot fsync directory \(directory) after moving \(files[index].path) into it"))
            }
        }
        return outcomes
    }
}
