// Tells whether some process still has a file open for writing, so a half-written delivery is never read.
import Foundation
public import ImagePipe
#if canImport(Glibc)
import Glibc
#endif

/// Detects open writers of a file on this machine.
///
/// The kernel grants a read lease only when no process has the file open for writing, which answers
/// the question exactly and at once. Leases need the file's owner (or CAP_LEASE) and a local
/// filesystem; otherwise every process's open files are looked up in /proc, which answers only when
/// every process's descriptors can be read (the same user, or root).
public enum WriterCheck {
    /// What is known about a file's writers.
    public enum Writers: Sendable, Equatable {
        /// No process has it open for writing.
        case none
        /// Some process has it open for writing.
        case open
        /// Neither a lease nor /proc could tell (the file belongs to another user whose processes
        /// this worker may not inspect).
        case unknown
    }

    private static let setLease: Int32 = 1024  // F_SETLEASE
    private static let readLease: Int32 = Int32(F_RDLCK)
    private static let unlock: Int32 = Int32(F_UNLCK)

    /// Whether any process has `path` open for writing.
    public static func writers(of path: String) -> Writers {
        writers(of: RawPath(path))
    }

    /// Whether any process has `path` open for writing. Only a regular file can be still being
    /// written: anything else (a link, a FIFO, a device) is never opened here and is reported as
    /// `.none`, to be refused when it is read.
    public static func writers(of path: RawPath) -> Writers {
        guard path.fileType(followingLinks: false) == S_IFREG else { return .none }
        let fd = path.withCString { open($0, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW) }
        guard fd >= 0 else { return .none }
        defer { close(fd) }
        if fcntl(fd, setLease, readLease) == 0 {
            _ = fcntl(fd, setLease, unlock)
            return .none
        }
        if errno == EAGAIN || errno == EBUSY { return .open }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return .none }
        return procWriters(device: info.st_dev, inode: info.st_ino)
    }

    /// Scans /proc/*/fdinfo for a descriptor on the same inode opened with write access.
    static func procWriters(device: UInt, inode: UInt) -> Writers {
        guard let processes = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return .unknown }
        let own = String(getpid())
        var hidden = false
        for pid in processes where pid != own && pid.allSatisfy(\.isNumber) {
            guard let descriptors = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd") else {
                // Gone since the listing, or another user's: only the second leaves the answer open.
                if access("/proc/\(pid)", F_OK) == 0 { hidden = true }
                continue
            }
            for descriptor in descriptors {
                var info = stat()
                guard stat("/proc/\(pid)/fd/\(descriptor)", &info) == 0,
                    info.st_ino == inode, info.st_dev == device
                else { continue }
                guard let fdinfo = try? String(contentsOfFile: "/proc/\(pid)/fdinfo/\(descriptor)", encoding: .utf8),
                    let line = fdinfo.split(separator: "\n").first(where: { $0.hasPrefix("flags:") }),
                    let flags = Int(line.dropFirst(6).trimmingCharacters(in: .whitespaces), radix: 8)
                else { return .open }
                if flags & Int(O_ACCMODE) != Int(O_RDONLY) { return .open }
            }
        }
        return hidden ? .unknown : .none
    }
}
