// The job queue directory: inbox/ for deliveries, processing/ for claims, done/ and failed/ for outcomes.
import Foundation
public import ImagePipe
#if canImport(Glibc)
import Glibc
#endif

/// The layout of a queue directory, created when missing.
///
/// Producers deliver originals into `inbox/` (subdirectories allowed; the relative directory becomes
/// `{dir}` in keys). Workers claim them by renaming into their own area under `processing/`, and
/// finish them into `done/` (with `NAME.json`, the result record) or `failed/` (with
/// `NAME.error.json`, the reason and every attempt's error). A job's options come beside its
/// original as `NAME.options.json` (``JobOptionsFile``).
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
        self.root = LocalPath.absolute(root)
        for directory in [self.root, inbox, processing, done, failed] {
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            } catch {
                throw .configuration("cannot create queue directory \(directory): \(IOErrorText.reason(of: error))")
            }
        }
    }

    /// Whether a delivered name is ignored: hidden (`.name`) or still being written by a convention
    /// (`.part`, `.tmp`, `.crdownload`).
    public static func isIgnored(_ name: String) -> Bool {
        name.hasPrefix(".") || name.hasSuffix(".part") || name.hasSuffix(".tmp") || name.hasSuffix(".crdownload")
    }

    /// A file under a queue folder.
    public struct Entry: Sendable, Hashable {
        /// Its path relative to the folder as keys, records and logs name it: invalid UTF-8 escaped
        /// as `%XX` (see ``RawPath/escaped``).
        public var name: String
        /// Its relative path as stored.
        public var raw: RawPath

        /// An entry whose name is valid UTF-8.
        public init(_ name: String) {
            self.init(name: name, raw: RawPath(name))
        }

        /// An entry with the relative path `raw`.
        public init(raw: RawPath) {
            self.init(name: raw.escaped, raw: raw)
        }

        init(name: String, raw: RawPath) {
            self.name = name
            self.raw = raw
        }
    }

    /// Every delivered file under `inbox/`, sorted by name; ignored names, options files (which go
    /// with their originals, ``JobOptionsFile``) and hidden directories are skipped, symbolic links
    /// are not followed (a link, a FIFO or a device is listed like a file, and refused when it is read).
    public func scanInbox() -> [Entry] {
        Self.files(under: inbox).filter { !JobOptionsFile.isOptions($0.name) }
    }

    /// The options files in `inbox/` whose original is not there (yet, or ever), by relative path:
    /// they are no jobs, and wait.
    public func optionsWithoutOriginal() -> [String] {
        let names = Self.files(under: inbox).map(\.name)
        let present = Set(names)
        return names.filter { JobOptionsFile.isOptions($0) && !present.contains(JobOptionsFile.original(of: $0)) }
    }

    /// Everything but directories under a directory, by relative path, skipping ignored names.
    static func files(under root: String) -> [Entry] {
        var result: [Entry] = []
        var stack = [RawPath(bytes: [])]
        while let relativeDirectory = stack.popLast() {
            let directory = relativeDirectory.bytes.isEmpty ? RawPath(root) : RawPath(root).appending(relativeDirectory)
            guard let entries = try? DirectoryListing.entries(of: directory) else { continue }
            for entry in entries where !isIgnored(entry.escapedName) {
                let relative = relativeDirectory.appending(entry.name)
                if entry.isDirectory {
                    stack.append(relative)
                } else {
                    result.append(Entry(raw: relative))
                }
            }
        }
        return result.sorted { $0.name < $1.name }
    }

    /// Removes subdirectories of the inbox that are empty and have not changed for `idle`; returns
    /// them (relative, escaped). Producers deliver into folders like `inbox/2024/trip/`, which would
    /// otherwise pile up once their files are claimed.
    ///
    /// The inbox itself and hidden folders are kept. A producer that has just created a folder finds
    /// it still there (it changed within `idle`), and one creating a file in it at the moment of the
    /// removal wins: `rmdir` only removes an empty directory.
    public func removeIdleEmptyDirectories(idleFor idle: Duration) -> [String] {
        var removed: [String] = []
        // Children before parents; a parent emptied now has just changed and waits for a later pass.
        func visit(_ relative: RawPath) -> Bool {
            let path = relative.bytes.isEmpty ? RawPath(inbox) : RawPath(inbox).appending(relative)
            guard let entries = try? DirectoryListing.entries(of: path) else { return false }
            var remaining = entries.count
            for entry in entries where entry.isDirectory && !entry.isHidden {
                if visit(relative.appending(entry.name)) { remaining -= 1 }
            }
            guard !relative.bytes.isEmpty, remaining == 0,
                let age = Self.timeSinceLastChange(path), age >= idle,
                path.withCString({ rmdir($0) }) == 0
            else { return false }
            removed.append(relative.escaped)
            return true
        }
        _ = visit(RawPath(bytes: []))
        return removed
    }

    /// How long ago a file's content or metadata last changed (for a directory: its entries).
    static func timeSinceLastChange(_ path: RawPath) -> Duration? {
        var info = stat()
        guard path.withCString({ stat($0, &info) }) == 0 else { return nil }
        let changed = max(
            Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9,
            Double(info.st_ctim.tv_sec) + Double(info.st_ctim.tv_nsec) / 1e9)
        return .seconds(Date().timeIntervalSince1970 - changed)
    }
}
