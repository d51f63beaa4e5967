// Reads a manifest (or done/ records) back: one JobResult per JSON line, for the commands that present results.
import Foundation

/// Reads JSON Lines written by ``ManifestWriter`` or a queue's records.
public enum ManifestReader {
    /// Every record of the file at `path` (`-` for standard input); lines that are not a result
    /// (blank, or another tool's) are passed over.
    public static func read(_ path: String) throws(ImagePipeError) -> [JobResult] {
        let data: Data
        do {
            data = path == "-" ? FileHandle.standardInput.readDataToEndOfFile() : try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw .configuration("cannot read the manifest \(path): \(IOErrorText.reason(of: error))")
        }
        let decoder = JSONDecoder()
        return String(decoding: data, as: UTF8.self).split(separator: "\n").compactMap {
            try? decoder.decode(JobResult.self, from: Data($0.utf8))
        }
    }
}
