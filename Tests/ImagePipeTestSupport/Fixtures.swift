// The repository's fixtures/ folder, found from this source file, and its files.
public import Foundation

/// The committed test images and data.
public enum Fixtures {
    /// The absolute path of `fixtures/`.
    public static let root = directory(above: #filePath)

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

    /// The repository's `fixtures/` folder, found by walking up from a source file (pass `#filePath`).
    private static func directory(above sourceFile: String) -> String {
        var url = URL(fileURLWithPath: sourceFile)
        while url.path != "/" {
            url.deleteLastPathComponent()
            if FileManager.default.fileExists(atPath: url.path + "/fixtures/README.md") { return url.path + "/fixtures" }
        }
        fatalError("no fixtures/ folder above \(sourceFile)")
    }
}
