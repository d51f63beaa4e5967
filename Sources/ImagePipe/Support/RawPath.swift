// A path as the kernel stores it: bytes that need not be valid UTF-8, with an escaped form for keys and logs.
#if canImport(Glibc)
import Glibc
#endif

/// A file-system path as bytes.
///
/// Linux file names are any bytes but `/` and NUL, while a Swift `String` is always valid Unicode:
/// a name with a byte like 0xFF cannot be opened through a `String` at all. Sources and deliveries
/// are therefore listed and opened as raw bytes, and named in keys, records and logs by their
/// ``escaped`` form, where every byte that is not part of valid UTF-8 is written as `%XX`.
public struct RawPath: Sendable, Hashable, CustomStringConvertible {
    /// The path's bytes, without a terminating NUL.
    public let bytes: [UInt8]

    /// The path of a `String` (always valid UTF-8).
    public init(_ path: String) {
        bytes = Array(path.utf8)
    }

    /// The path of raw bytes.
    public init(bytes: some Sequence<UInt8>) {
        self.bytes = Array(bytes)
    }

    /// `self/name`; with an empty `self`, just `name`.
    public func appending(_ name: RawPath) -> RawPath {
        bytes.isEmpty ? name : RawPath(bytes: bytes + [UInt8(ascii: "/")] + name.bytes)
    }

    /// Whether the bytes are valid UTF-8, so the path is exactly its ``escaped`` form.
    public var isValidUTF8: Bool { String(validating: bytes, as: UTF8.self) != nil }

    /// The path as text: valid UTF-8 as it is, every other byte as `%XX` (upper-case hex).
    public var escaped: String { Self.escape(bytes) }

    public var description: String { escaped }

    /// The last component, escaped (what error messages name).
    public var lastComponent: String {
        Self.escape(bytes.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true).last ?? [])
    }

    /// Calls `body` with the path as a NUL-terminated C string.
    public func withCString<Result>(_ body: (UnsafePointer<CChar>) throws -> Result) rethrows -> Result {
        try (bytes + [0]).withUnsafeBufferPointer { buffer in
            try buffer.withMemoryRebound(to: CChar.self) { try body($0.baseAddress!) }
        }
    }

    /// The file type (`S_IFREG`, `S_IFDIR`, `S_IFLNK`, ...) of what the path names, or nil when it
    /// cannot be examined; with `followingLinks`, of a link's target.
    public func fileType(followingLinks: Bool) -> UInt32? {
        var info = stat()
        let status = withCString { followingLinks ? stat($0, &info) : lstat($0, &info) }
        return status == 0 ? info.st_mode & S_IFMT : nil
    }

    /// Valid UTF-8 kept as it is, every byte of an invalid sequence written as `%XX`.
    public static func escape(_ bytes: some Collection<UInt8>) -> String {
        var result = ""
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = bytes.makeIterator()
        var offset = bytes.startIndex
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid(let encoded):
                result.unicodeScalars.append(Unicode.UTF8.decode(encoded))
                offset = bytes.index(offset, offsetBy: encoded.count)
            case .error(let length):
                for byte in bytes[offset...].prefix(length) {
                    result += "%" + String(byte >> 4, radix: 16, uppercase: true) + String(byte & 0xF, radix: 16, uppercase: true)
                }
                offset = bytes.index(offset, offsetBy: length)
            case .emptyInput:
                return result
            }
        }
    }
}
