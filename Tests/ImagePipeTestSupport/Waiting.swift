// Waiting in tests for something another thread or process does: polling against a deadline.
import Foundation

/// Polls `condition` every 10 ms until it holds or `seconds` pass, and returns its last value.
///
/// The deadline only keeps a broken test from hanging; it is not a measurement.
@discardableResult
public func eventually(seconds: Double = 60, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        Thread.sleep(forTimeInterval: 0.01)
    }
    return condition()
}

/// The repository's `fixtures/` folder, found by walking up from a source file (pass `#filePath`).
public func fixturesDirectory(above sourceFile: String) -> String {
    var url = URL(fileURLWithPath: sourceFile)
    while url.path != "/" {
        url.deleteLastPathComponent()
        if FileManager.default.fileExists(atPath: url.path + "/fixtures/README.md") { return url.path + "/fixtures" }
    }
    fatalError("no fixtures/ folder above \(sourceFile)")
}
