// `imagepipe duplicates`: groups of originals whose PDQ hashes say they are the same picture.
import ArgumentParser
import Foundation
import ImagePipe

struct DuplicatesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "duplicates",
        abstract: "Group the originals in manifests or queue directories that are the same picture: resized, recompressed, slightly cropped.",
        discussion: """
            Reads each manifest written by `batch --manifest` (or '-' for standard input), or each queue \
            directory's done/ records, and compares the PDQ hashes in their records' facts: originals whose \
            hashes are within --max-distance bits (of 256) are one group, linked through one another. \
            Prints one group per line, its largest distance first, then its sources; with --json, one \
            object per group: {"sources": [...], "largest_distance": N}, and "inputs" naming where each \
            source was read when several were given. Hashes whose quality is under --min-quality (a \
            blank or flat picture, which matches too much) are left out, and so are records without one \
            (failed, made with --facts none, or by an imagepipe before facts). A file read twice (the same \
            source and SHA-256 in two manifests) counts once. Exit status 0 whether or not a group is found.
            """)

    @Argument(help: "Manifests (JSON lines; '-' for standard input) or queue directories.")
    var inputs: [String]

    @Option(
        name: .customLong("max-distance"),
        help: ArgumentHelp("The most bits two hashes may differ by and be one picture; 31 is PDQ's own threshold.", valueName: "bits"))
    var maxDistance = NearDuplicates.defaultMaxDistance

    @Option(
        name: .customLong("min-quality"),
        help: ArgumentHelp("Leave out hashes of lower quality (0–100); PDQ's authors trust 50 and over.", valueName: "quality"))
    var minQuality = 50

    @Flag(help: "Print one JSON object per group instead of a line.")
    var json = false

    func validate() throws {
        guard !inputs.isEmpty else { throw ValidationError("give at least one manifest or queue directory") }
        guard (0...256).contains(maxDistance) else {
            throw ValidationError("--max-distance must be 0 to 256 (got \(maxDistance)): a PDQ hash has 256 bits")
        }
        guard (0...100).contains(minQuality) else { throw ValidationError("--min-quality must be 0 to 100 (got \(minQuality))") }
    }

    /// One original with a hash, and where it was read.
    struct Entry {
        var source: String
        var input: String
        var sha256: String?
    }

    func run() throws {
        var entries: [Entry] = []
        var finder = NearDuplicates(maxDistance: maxDistance)
        // Each file (its name and SHA-256) counts once: hashed, or left out.
        var seen: Set<String> = [], seenLeftOut: Set<String> = []
        var leftOut = 0
        for input in inputs {
            for result in try Self.records(in: input) {
                let file = result.sha256.map { result.source + "\u{0}" + $0 }
                guard let pdq = result.facts?.pdq, pdq.quality >= minQuality, let digest = PDQDigest(hex: pdq.hash) else {
                    // Only records that could have had one: not failures, nor files that were no image.
                    if result.status == .done || result.skipCode == .upToDate, file.map({ seenLeftOut.insert($0).inserted }) ?? true {
                        leftOut += 1
                    }
                    continue
                }
                // The same file recorded again (a re-run's manifest beside the first) is one original;
                // a failed record of it before does not hide the one that hashed it.
                if let file, !seen.insert(file).inserted { continue }
                _ = finder.add(digest)
                entries.append(Entry(source: result.source, input: input, sha256: result.sha256))
            }
        }
        let groups = finder.groups()
        let console = Console.shared
        for group in groups {
            // In the order of their names, which a reader scans more easily than the run's order.
            let members = group.members.map { entries[$0] }.sorted { ($0.source, $0.input) < ($1.source, $1.input) }
            if json {
                var line = "{\"sources\": [" + members.map(\.source.doubleQuoted).joined(separator: ", ") + "]"
                if inputs.count > 1 { line += ", \"inputs\": [" + members.map(\.input.doubleQuoted).joined(separator: ", ") + "]" }
                console.output(Data((line + ", \"largest_distance\": \(group.largestDistance)}\n").utf8))
            } else {
                let names = members.map { inputs.count > 1 ? "\($0.input): \($0.source)" : $0.source }
                console.output(Data(("\(group.largestDistance)\t" + names.map(Self.shown).joined(separator: "\t") + "\n").utf8))
            }
        }
        let grouped = groups.reduce(0) { $0 + $1.members.count }
        var summary = "imagepipe: \(groups.count) \(groups.count == 1 ? "group" : "groups") of \(grouped) originals among \(entries.count) hashed"
        if leftOut > 0 {
            summary += "; \(leftOut) without a usable hash left out (--facts none, an earlier imagepipe, or quality under \(minQuality))"
        }
        console.line(summary)
    }

    /// A name as the text output shows it: as it is, unless it holds a control character (C0,
    /// DEL or C1), which would split the line or drive the terminal: then quoted, escaped.
    static func shown(_ name: String) -> String {
        let controls = name.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }
        return controls ? name.doubleQuoted : name
    }

    /// The records of a manifest, or of a queue directory's `done/` folder (each job's record a
    /// `.json` file beside its original, in nested folders as the inbox had them).
    static func records(in input: String) throws(ImagePipeError) -> [JobResult] {
        var isDirectory: ObjCBool = false
        guard input != "-", FileManager.default.fileExists(atPath: input, isDirectory: &isDirectory), isDirectory.boolValue else {
            return try ManifestReader.read(input)
        }
        let done = (input as NSString).appendingPathComponent("done")
        guard FileManager.default.fileExists(atPath: done, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw .configuration("\(input) is a directory with no done/ folder: give a manifest or a queue directory")
        }
        var results: [JobResult] = []
        let paths = (FileManager.default.enumerator(atPath: done)?.allObjects as? [String] ?? []).sorted()
        for path in paths where path.hasSuffix(".json") && !path.hasSuffix(".options.json") && !path.hasSuffix(".error.json") {
            results += try ManifestReader.read((done as NSString).appendingPathComponent(path))
        }
        return results
    }
}
