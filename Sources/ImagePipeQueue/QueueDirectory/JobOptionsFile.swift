// A job's options delivered beside its original in a queue directory: `inbox/NAME.options.json`, read when NAME is claimed.
import Foundation
import ImagePipe
#if canImport(Glibc)
import Glibc
#endif

/// The options file of a queue directory's job: `NAME.options.json` beside the original `NAME`,
/// holding the JSON object a PostgreSQL job keeps in its `options` (``QueuedJobOptions``), so a
/// producer of either kind of queue says the same thing the same way.
///
/// A name ending in `.options.json` is never a job of its own, whatever it holds: it waits in the
/// inbox until its original is claimed (one whose original never comes stays there). It then goes
/// where the original goes, always under the original's name with this suffix: into the claim area
/// (after the original, so a crash between the two leaves it in the inbox, where the original comes
/// back to), back to the inbox (before the original, so the original never waits there without it),
/// and beside the original in `failed/`, where it can be put right before `imagepipe retry` sends both
/// back. A job that is done needs it no more, and it is removed: `done/` holds originals and their
/// records only, so no options file there can take the name of another original's record
/// (`NAME.options.json` is the record of an original named `NAME.options`).
public enum JobOptionsFile {
    /// What an options file's name ends in.
    public static let suffix = ".options.json"

    /// The most of an options file that is read, as for a PostgreSQL job's options
    /// (`JobSource.maxOptionsBytes`): options are a few short values.
    static let maxBytes = 4096

    /// Whether a relative path names an options file rather than a job.
    public static func isOptions(_ relative: String) -> Bool {
        relative.hasSuffix(suffix)
    }

    /// The options file of the original at `relative`.
    public static func name(of relative: String) -> String {
        relative + suffix
    }

    /// The original an options file belongs to.
    public static func original(of relative: String) -> String {
        String(relative.dropLast(suffix.count))
    }

    /// The options in the file at `path`, or nil when there is none.
    ///
    /// Only a regular file is read (a link is not followed, a FIFO never waited on), and no more of
    /// it than ``maxBytes``: it comes from strangers, as the original does.
    ///
    /// - Throws: `invalid_job_options` naming the file (`name`, as the inbox names it) and what is
    ///   wrong: no regular file, too long, not UTF-8, not a JSON object, a focus that is not two
    ///   fractions from 0 to 1 (shown as written).
    static func read(_ path: String, named name: String) throws(ImagePipeError) -> QueuedJobOptions? {
        func refuse(_ why: String) -> ImagePipeError { ImagePipeError(.invalidJobOptions, "\(name) \(why)") }
        BlockingIO.mayBlock("open \(path)")
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        if fd < 0 {
            switch errno {
            case ENOENT: return nil
            case ELOOP: throw refuse("is a symbolic link, not a regular file")
            default: throw refuse("cannot be read: \(String(cString: strerror(errno)))")
            }
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { throw refuse("is not a regular file") }
        var bytes = [UInt8](repeating: 0, count: maxBytes + 1)
        var count = 0
        while count < bytes.count {
            let got = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + count, $0.count - count) }
            if got < 0 && errno == EINTR { continue }
            guard got >= 0 else { throw refuse("cannot be read: \(String(cString: strerror(errno)))") }
            if got == 0 { break }
            count += got
        }
        guard count <= maxBytes else { throw refuse("is longer than the \(maxBytes) bytes options may have") }
        guard let text = String(validating: bytes[..<count], as: UTF8.self) else { throw refuse("is not UTF-8 text") }
        do {
            return try QueuedJobOptions(json: text)
        } catch {
            throw error.prefixed(name)
        }
    }
}
