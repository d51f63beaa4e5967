// Lists a directory by its raw entry names, so a name that is not valid UTF-8 is found like any other.
#if canImport(Glibc)
import Glibc
#endif

/// One directory level, read with `readdir`.
///
/// Foundation's listings decode names as UTF-8 and drop or mangle those that are not, so a file
/// named with a byte like 0xFF would vanish from a batch or stay in a queue's inbox for ever. The
/// batch scanner and the queue both list through here.
public enum DirectoryListing {
    /// One entry of a directory.
    public struct Entry: Sendable, Hashable {
        /// The name as stored.
        public var name: RawPath
        /// Its type as `lstat` sees it (`S_IFREG`, `S_IFDIR`, `S_IFLNK`, `S_IFIFO`, ...): links are not followed.
        /// (A `mode_t`, spelt as the integer it is: Glibc stays out of this module's interface.)
        public var type: UInt32

        /// The name as text, invalid bytes escaped as `%XX` (see ``RawPath/escaped``).
        public var escapedName: String { name.escaped }
        /// Whether the name starts with `.`.
        public var isHidden: Bool { name.bytes.first == UInt8(ascii: ".") }
        /// Whether it is a directory (not a link to one).
        public var isDirectory: Bool { type == S_IFDIR }
    }

    /// The entries of `directory`, except `.` and `..`, in no particular order. An entry removed
    /// while the listing runs is left out.
    ///
    /// - Throws: the system's reason (`Permission denied`, ...) as an `unreadable_source` error;
    ///   callers name the directory.
    public static func entries(of directory: RawPath) throws(ImagePipeError) -> [Entry] {
        guard let stream = directory.withCString({ opendir($0) }) else {
            throw ImagePipeError(.unreadableSource, String(cString: strerror(errno)))
        }
        defer { closedir(stream) }
        let descriptor = dirfd(stream)
        var entries: [Entry] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { Array($0.prefix(while: { $0 != 0 })) }
            if name == [UInt8(ascii: ".")] || name == [UInt8(ascii: "."), UInt8(ascii: ".")] { continue }
            let rawName = RawPath(bytes: name)
            var info = stat()
            guard rawName.withCString({ fstatat(descriptor, $0, &info, AT_SYMLINK_NOFOLLOW) }) == 0 else { continue }
            entries.append(Entry(name: rawName, type: info.st_mode & S_IFMT))
        }
        return entries
    }
}
