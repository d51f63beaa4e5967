// The path helpers against Foundation's NSString path rules, which they replace on the hot paths.
import Foundation
import ImagePipe
import Testing

struct LocalPathTests {
    static let paths = [
        "a.jpg", "dir/a.jpg", "/a.jpg", "/srv/queue/inbox/a.jpg", "/srv/queue/inbox/", "dir//a.jpg", "dir/",
        "/", "", ".hidden", "dir/.hidden", "/srv/a.b.c.jpg", "archive.tar.gz", "dir.d/name", "dir.d/", "a.", "./a.jpg",
    ]

    @Test(arguments: paths) func aPathSplitsAsFoundationSplitsIt(_ path: String) {
        #expect(LocalPath.parent(of: path) == (path as NSString).deletingLastPathComponent, "parent of \(path)")
        #expect(LocalPath.name(of: path) == (path as NSString).lastPathComponent, "name of \(path)")
        #expect(LocalPath.deletingExtension(path) == (path as NSString).deletingPathExtension, "extension of \(path)")
    }
}
