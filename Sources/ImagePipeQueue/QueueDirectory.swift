// The job queue directory: inbox/ for deliveries, processing/ for claims, done/ and failed/ for outcomes.
import Foundation
import ImagePipe
#if canImport(Glibc)
import Glibc
#endif

/// The layout of a queue directory, created when missing.
///
/// Producers deliver originals into `inbox/` (subdirectories allowed; the relative directory becomes
/// `{dir}` in keys). Workers claim them by renaming into their own area under `processing/`, and
/// finish them into `done/` (with `NAME.json`, the result record) or `failed/` (with
/// `NAME.error.json`, the reason and every attempt's error).
public struct QueueDirectory: Sendable {
    /// The queue root.
    public let root: String
    /// Deliveries waiting to be claimed.
    public var inbox: String { root + "/inbox" }
    /// One claim area per live worker.
    public var processing: String { root + "/processing" }
    /// Originals whose variants are stored, with their result records.
    public var done: String { root + "/done" }
    /// Originals that failed for good, with the reasons.
    public var failed: String { root + "/failed" }

    /// Opens the queue at `root`, creating the four directories when missing.
    public init(root: String) throws(ImagePipeError) {
        self.root = FilePath.absolute(root)
        for directory in [self.root, inbox, processing, done, failed] {
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            } catch {
                throw .configuration("cannot create queue directory \(directory): \(FilePath.reason(of: error))")
            }
        }
    }

    /// Whether a delivered name is ignored: hidden (`.name`) or still being written by a convention
    /// (`.part`, `.tmp`, `.crdownload`).
    public static func isIgnored(_ name: String) -> Bool {
        name.hasPrefix(".") || name.hasSuffix(".part") || name.hasSuffix(".tmp") || name.hasSuffix(".crdownload")
    }

    /// Every delivered file under `inbox/`, as sorted relative paths; ignored names and hidden
    /// directories are skipped, symbolic links are not followed.
    public func scanInbox() -> [String] {
        Self.files(under: inbox)
    }

    /// Regular files under a directory, as relative paths, skipping ignored names.
    static func files(under root: String) -> [String] {
        var result: [String] = []
        var stack = [""]
        while let relativeDirectory = stack.popLast() {
            let directory = relativeDirectory.isEmpty ? root : root + "/" + relativeDirectory
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { continue }
            for name in names where !isIgnored(name) {
                let relative = relativeDirectory.isEmpty ? name : relativeDirectory + "/" + name
                var info = stat()
                guard lstat(directory + "/" + name, &info) == 0 else { continue }
                switch info.st_mode & S_IFMT {
                case S_IFDIR: stack.append(relative)
                case S_IFREG: result.append(relative)
                default: continue
                }
            }
        }
        return result.sorted()
    }
}
