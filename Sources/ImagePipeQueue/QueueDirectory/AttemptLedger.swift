// What a queue directory remembers of a job beyond one worker's life: the workers that died holding it, and its decoder's failures.
import Foundation
import ImagePipe
#if canImport(Glibc)
import Glibc
#endif

/// One job's attempts that ended without a result of their own: the workers that died while they
/// held it, and how many of its attempts ended with its decoder failing (crashed, or stopped at
/// `--job-timeout`). Kept by ``AttemptLedger``.
struct AttemptTally: Codable, Equatable {
    /// A worker found dead holding the job: its claim area's name (`<host>-<pid>-<random>`), and
    /// when that was found (RFC 3339 in UTC with milliseconds).
    struct Death: Codable, Equatable {
        var worker: String
        var at: String
    }

    /// The original's name when this was last written, for people reading the folder.
    var source: String
    /// The original it is the tally of: its inode number, size and modification time (nanoseconds
    /// since 1970), see ``AttemptLedger``.
    var inode: UInt64
    var size: Int64
    var modified: Int64
    /// Workers that died while they held the job.
    var workerDeaths = 0
    /// The latest of them, oldest first, at most ``AttemptLedger/keptDeaths``.
    var deaths: [Death] = []
    /// Attempts that ended with a decoder failure (``ImagePipeError/Code/isDecoderFailure``).
    var decoderFailures = 0

    enum CodingKeys: String, CodingKey {
        case source, inode, size, modified, workerDeaths = "worker_deaths", deaths, decoderFailures = "decoder_failures"
    }
}

/// Where a queue directory keeps the ``AttemptTally`` of the jobs that have one:
/// `QUEUE/.attempts/INODE.json`, one small file per job.
///
/// A worker that stops or dies keeps nothing in memory, and its jobs go back to the inbox under the
/// names they came by, so a count of the workers that died holding a job, or of its decoder's
/// failures, can live neither in a worker nor in a name. It is kept by the original's inode, which
/// every move of a job keeps (a rename, or a hard link then an unlink): no move carries a second
/// file beside the original, so a job is still a file under two names at worst, never under none,
/// and every move stays as it was. It is a file of the queue's own rather than an extended
/// attribute on the original, because a worker may move a delivery it may not write (another
/// user's file, `0644`), and a file system may keep no user attributes.
///
/// An inode number is used again once its file is gone: an entry records the original's size and
/// modification time as well, and one that does not match them was another file's, and is ignored.
/// Most jobs never have an entry. One is written, durably, when a worker is found dead holding the
/// job and when its decoder fails; it is removed once the job's record is written in `done/` or
/// `failed/` (before its claim is released, so a crash in between leaves it to the worker that
/// takes the claim area over), and when `imagepipe retry` sends a job back for a new start. A
/// normal release (a worker stopping) leaves it as it is: the job keeps its count in the inbox.
enum AttemptLedger {
    /// The most deaths an entry lists (it counts them all).
    static let keptDeaths = 20

    /// The ledger's folder.
    static func folder(of queue: QueueDirectory) -> String { queue.root + "/.attempts" }

    /// The file at `path` as the ledger knows it, without its tally; nil when nothing is there.
    static func identity(of path: String) -> (inode: UInt64, size: Int64, modified: Int64)? {
        BlockingIO.mayBlock("lstat \(path)")
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return (UInt64(info.st_ino), Int64(info.st_size), Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec))
    }

    private static func entry(_ inode: UInt64, in queue: QueueDirectory) -> String { folder(of: queue) + "/\(inode).json" }

    /// The tally of the job whose original is at `path`: nil when it has none, or nothing is there.
    static func tally(of path: String, in queue: QueueDirectory) -> AttemptTally? {
        guard let file = identity(of: path) else { return nil }
        guard let data = FileManager.default.contents(atPath: entry(file.inode, in: queue)),
            let tally = try? JSONDecoder().decode(AttemptTally.self, from: data),
            tally.inode == file.inode, tally.size == file.size, tally.modified == file.modified
        else { return nil }
        return tally
    }

    /// Counts the death of `worker`, found holding the job at `path` (named `source`) in its claim
    /// area, and returns the tally. A take-over cut short and done again finds that death counted
    /// already (the last one listed), and counts it once.
    ///
    /// - Throws: when the tally cannot be written: the job is then counted as it was.
    static func countDeath(
        of worker: String, holding path: String, named source: String, in queue: QueueDirectory
    ) throws(ImagePipeError)
        -> AttemptTally
    {
        var tally = try current(path, named: source, in: queue)
        if tally.deaths.last?.worker == worker { return tally }
        tally.workerDeaths += 1
        tally.deaths = Array((tally.deaths + [AttemptTally.Death(worker: worker, at: JSONLine.timestamp())]).suffix(keptDeaths))
        try write(tally, in: queue)
        return tally
    }

    /// Counts an attempt of the job at `path` (named `source`) that ended with a decoder failure,
    /// after `earlier` such attempts (those its worker counted, should an earlier write have failed).
    static func countDecoderFailure(of path: String, named source: String, after earlier: Int, in queue: QueueDirectory) throws(ImagePipeError) {
        var tally = try current(path, named: source, in: queue)
        tally.decoderFailures = max(tally.decoderFailures, earlier) + 1
        try write(tally, in: queue)
    }

    /// Removes the tally of the file at `path`, if it has one: its job is finished, or starts again.
    static func forget(_ path: String, in queue: QueueDirectory) {
        guard let file = identity(of: path) else { return }
        BlockingIO.mayBlock("unlink an attempt tally")
        unlink(entry(file.inode, in: queue))
    }

    /// The tally to add to: the job's own, or a new one for the file at `path`.
    private static func current(_ path: String, named source: String, in queue: QueueDirectory) throws(ImagePipeError) -> AttemptTally {
        guard let file = identity(of: path) else { throw FileMoves.failure("cannot count an attempt of \(source)") }
        var tally = tally(of: path, in: queue) ?? AttemptTally(source: source, inode: file.inode, size: file.size, modified: file.modified)
        tally.source = source
        return tally
    }

    /// Writes a tally whole (a temporary file renamed over the entry) and durably.
    private static func write(_ tally: AttemptTally, in queue: QueueDirectory) throws(ImagePipeError) {
        try makeFolder(of: queue)
        try DurableFile.write(Data((JSONLine.encode(tally) + "\n").utf8), to: entry(tally.inode, in: queue))
    }

    /// Creates the ledger's folder the first time, durably: its entry in the queue's root is
    /// fsynced, so a tally written in it cannot vanish in a crash that the tally's own write survives.
    private static func makeFolder(of queue: QueueDirectory) throws(ImagePipeError) {
        let folder = folder(of: queue)
        var info = stat()
        guard lstat(folder, &info) != 0 else { return }
        BlockingIO.mayBlock("mkdir \(folder)")
        guard mkdir(folder, 0o755) == 0 || errno == EEXIST else { throw FileMoves.failure("cannot create \(folder)") }
        if let failed = DurableFile.syncDirectory(queue.root) {
            errno = failed.rawValue
            throw FileMoves.failure("cannot sync \(queue.root)")
        }
    }
}
