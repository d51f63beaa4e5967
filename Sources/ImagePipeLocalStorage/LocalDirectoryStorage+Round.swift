// One round of the local directory's group commit: the files' data, then their names, made durable together.
import Foundation
import ImagePipe
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
        /// The object, without its bytes.
        var object: StorageObject
        var bytes: Int
        /// The URL recorded for it (``LocalDirectoryStorage/url(forKey:)``).
        var url: String
    }

    /// Makes every file durable, moves each into place and makes the names durable; one outcome per
    /// file, in order.
    ///
    /// Each file is on disk before its name is (a crash never leaves a short file under a final
    /// name), and a put succeeds only once its name is on disk too, and the names of the
    /// directories leading to it from `root`: each stored file's directory and every directory
    /// above it is synced, whichever put or process made them. Both steps are rounds of their own
    /// (``SyncRound``): on ext4 and XFS one `syncfs` each, whatever the number of files, with each
    /// file's own write-back error read after it; elsewhere an fsync per file, writeback of every
    /// file started before the first waits, and an fsync per directory. When a directory cannot be
    /// synced, every put under it fails, and a file this round moved into place there is removed
    /// again, so a retry makes it anew instead of finding it there.
    ///
    /// `syncFiles` and `syncDirectories` (``SyncRound/sync(_:calls:)`` by default) return one error
    /// number or nil per item: tests fail them on purpose.
    static func commit(
        _ files: [WrittenFile], root: String,
        syncFiles: ([Int32]) -> [Int32?] = { SyncRound.sync($0.map(SyncRound.Item.file)) },
        syncDirectories: ([String]) -> [Int32?] = { SyncRound.sync($0.map(SyncRound.Item.directory)) }
    ) -> [Result<StoredObject, ImagePipeError>] {
        for file in files { DurableFile.startWriteback(file.fd) }
        let synced = syncFiles(files.map(\.fd))
        var outcomes = zip(files, synced).map { file, synced -> Result<StoredObject, ImagePipeError> in
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
        // Each directory whose entries lead to a stored file, with the files that need it: found in
        // place too, since the put that moved it there (another job's, or a run that was killed)
        // may not have synced it yet.
        var directories: [String: [Int]] = [:]
        for (index, file) in files.enumerated() {
            guard (try? outcomes[index].get()) != nil else { continue }
            var directory = file.directory
            while true {
                directories[directory, default: []].append(index)
                guard directory.utf8.count > root.utf8.count, let slash = directory.utf8.lastIndex(of: UInt8(ascii: "/")) else { break }
                directory = String(directory[..<slash])
            }
        }
        // Deepest first, so a failure names the directory nearest the file whatever the order of the table.
        let ordered = directories.keys.sorted { $0.utf8.count > $1.utf8.count || ($0.utf8.count == $1.utf8.count && $0 < $1) }
        for (directory, failed) in zip(ordered, syncDirectories(ordered)) {
            guard let code = failed else { continue }
            for index in directories[directory]! {
                guard case .success(let stored) = outcomes[index] else { continue }
                // Only a file this round moved there is taken out again; one found in place may be
                // another job's, reported stored already.
                if !stored.wasInPlace { unlink(files[index].path) }
                outcomes[index] = .failure(Self.failure(code, "cannot fsync directory \(directory) after moving \(files[index].path) into it"))
            }
        }
        return outcomes
    }
}
