// A scratch directory for a test, removed when the value goes away.
public import Foundation

/// A new empty directory under the system temporary directory, deleted on deinit.
public final class TemporaryDirectory: Sendable {
    /// Its absolute path.
    public let path: String

    /// Creates the directory, under `base` when given (`/dev/shm` for one on tmpfs).
    public init(prefix: String = "imagepipe-test", under base: String? = nil) {
        let base = base ?? FileManager.default.temporaryDirectory.path
        path = "\(base)/\(prefix)-\(UUID().uuidString.prefix(8))"
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// The absolute path of `relative` inside the directory.
    public func url(_ relative: String) -> String { path + "/" + relative }

    /// Writes `contents` to `relative`, creating parent directories; returns the absolute path.
    @discardableResult
    public func write(_ relative: String, _ contents: Data) -> String {
        let target = url(relative)
        try! FileManager.default.createDirectory(
            atPath: (target as NSString).deletingLastPathComponent,
            withIntermediateDirectories: true)
        try! contents.write(to: URL(fileURLWithPath: target))
        return target
    }

    /// Writes a UTF-8 string to `relative`; returns the absolute path.
    @discardableResult
    public func write(_ relative: String, _ text: String) -> String {
        write(relative, Data(text.utf8))
    }

    /// Every regular file under the directory, as sorted relative paths.
    public func files(under relative: String = "") -> [String] {
        let root = relative.isEmpty ? path : url(relative)
        guard let enumerator = FileManager.default.enumerator(atPath: root) else { return [] }
        var result: [String] = []
        while let item = enumerator.nextObject() as? String {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: root + "/" + item, isDirectory: &isDirectory), !isDirectory.boolValue {
                result.append(item)
            }
        }
        return result.sorted()
    }
}
