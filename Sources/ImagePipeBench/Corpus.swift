// A benchmark corpus: a folder of images, optionally repeated through hard links to make a long batch.
import Foundation
public import ImagePipe

/// The images a benchmark runs over.
public struct Corpus: Sendable {
    /// The folder.
    public var directory: String
    /// Image paths relative to it, sorted.
    public var files: [String]
    /// Their total size in bytes.
    public var bytes: Int

    /// Lists the images under `directory`.
    public init(directory: String) throws(ImagePipeError) {
        let scan = try SourceScanner(root: directory).scan()
        guard !scan.jobs.isEmpty else { throw .configuration("no images in \(directory)") }
        self.directory = LocalPath.absolute(directory)
        self.files = scan.jobs.map(\.relativePath)
        self.bytes = scan.jobs.reduce(0) { total, job in
            total + ((try? FileManager.default.attributesOfItem(atPath: job.path)[.size] as? Int) ?? 0)
        }
    }

    /// A corpus of `copies` × this one in `directory`, made of hard links (no extra disk space).
    public func repeated(_ copies: Int, into directory: String) throws(ImagePipeError) -> Corpus {
        do {
            try? FileManager.default.removeItem(atPath: directory)
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            for copy in 0..<copies {
                let folder = directory + String(format: "/copy-%04d", copy)
                for file in files {
                    let target = folder + "/" + file
                    try FileManager.default.createDirectory(
                        atPath: LocalPath.parent(of: target),
                        withIntermediateDirectories: true)
                    if link(self.directory + "/" + file, target) != 0 {
                        try FileManager.default.copyItem(atPath: self.directory + "/" + file, toPath: target)
                    }
                }
            }
        } catch {
            throw .configuration("cannot build the repeated corpus in \(directory): \(IOErrorText.reason(of: error))")
        }
        return try Corpus(directory: directory)
    }
}
