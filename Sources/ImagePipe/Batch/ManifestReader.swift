// Reads a manifest (or done/ records) back: one JobResult per JSON line, for the commands that present results.
import Foundation

/// Reads JSON Lines written by ``ManifestWriter`` or a queue's records.
public enum ManifestReader {
    /// Every record of the file at `path` (`-` for standard input), in order. Blank lines are
    /// passed over; any other line that is not a result record is an error naming the file and the
    /// line, so a log or another tool's file given by mistake is not read as an empty run.
    ///
    /// - Throws: `configuration` when the file cannot be read or a line is not a record.
    public static func read(_ path: String) throws(ImagePipeError) -> [JobResult] {
        let data: Data
        do {
            // Read through a handle, not `Data(contentsOf:)`: that refuses what is not a regular file
            // (`/dev/null`, a pipe, `<(zcat manifest.gz)`) with a misleading "permission" error.
            let handle = path == "-" ? FileHandle.standardInput : try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
            data = try handle.readToEnd() ?? Data()
        } catch {
            throw .configuration("cannot read the manifest \(path): \(IOErrorText.reason(of: error))")
        }
        let name = path == "-" ? "standard input" : path
        let decoder = JSONDecoder()
        var results: [JobResult] = []
        // Split on bytes, keeping empty lines, so the number given is the line an editor shows.
        for (index, line) in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.drop { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") || $0 == UInt8(ascii: "\r") }
            if trimmed.isEmpty { continue }
            do {
                results.append(try decoder.decode(JobResult.self, from: Data(line)))
            } catch {
                throw .configuration(
                    "\(name), line \(index + 1): not an imagepipe manifest record (\(reason(error, line: line))); expected the JSON lines `batch --manifest` writes"
                )
            }
        }
        return results
    }

    /// What is wrong with a line, in a few words: decoding errors' own descriptions are long and
    /// name Swift types.
    private static func reason(_ error: any Error, line: Data.SubSequence) -> String {
        guard (try? JSONSerialization.jsonObject(with: Data(line))) is [String: Any] else {
            let start = String(decoding: line.prefix(40), as: UTF8.self)
            return "not a JSON object: '\(start)\(line.count > 40 ? "…" : "")'"
        }
        switch error as? DecodingError {
        case .keyNotFound(let key, let context)?:
            return "no \"\((context.codingPath + [key]).map(\.stringValue).joined(separator: "."))\""
        case .typeMismatch(_, let context)?, .valueNotFound(_, let context)?, .dataCorrupted(let context)?:
            let field = context.codingPath.map(\.stringValue).joined(separator: ".")
            return field.isEmpty ? context.debugDescription : "\"\(field)\" is not valid: \(context.debugDescription)"
        default:
            return "\(error)"
        }
    }
}
