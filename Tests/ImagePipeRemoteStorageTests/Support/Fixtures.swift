// Finds the repository's fixtures/ folder from this source file.
import Foundation
import ImagePipeTestSupport

enum Fixtures {
    /// The absolute path of `fixtures/`.
    static let root = fixturesDirectory(above: #filePath)

    /// The bytes of a fixture.
    static func data(_ relative: String) throws -> Data {
        try Data(contentsOf: URL(fileURLWithPath: root + "/" + relative))
    }
}
