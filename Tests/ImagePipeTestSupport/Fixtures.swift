// The repository's fixtures/ folder, found from this source file, and its files.
public import Foundation

/// The committed test images and data.
public enum Fixtures {
    /// The absolute path of `fixtures/`.
    public static let root = fixturesDirectory(above: #filePath)

    /// The absolute path of the repository's checkout (where `deploy/` and the Makefile are).
    public static var repository: String { (root as NSString).deletingLastPathComponent }

    /// The absolute path of a fixture.
    public static func path(_ relative: String) -> String { root + "/" + relative }

    /// The bytes of a fixture.
    public static func data(_ relative: String) -> Data {
        try! Data(contentsOf: URL(fileURLWithPath: path(relative)))
    }

    /// The names in a fixture folder, sorted.
    public static func files(in directory: String) -> [String] {
        (try! FileManager.default.contentsOfDirectory(atPath: path(directory))).sorted()
    }
}
